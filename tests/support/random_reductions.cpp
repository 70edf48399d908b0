#include "support/random_reductions.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/data_type.hpp"
#include "base/error.hpp"
#include "braid/elements.hpp"
#include "support/reduce_support.hpp"

namespace braid::testing {

namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Rank r's input at index i, already rounded to the type: uniform in [-1, 1), or for products a magnitude in
// [0.75, 1.33) with a random sign, so that a product over 8 ranks neither overflows nor underflows float16.
double inputOf(const RandomCase& c, int r, std::size_t i) {
  const std::uint64_t h = mix(c.seed ^ mix(static_cast<std::uint64_t>(r) * 0x100000001b3ull + i));
  const double unit = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
  double v = 2 * unit - 1;
  if (c.op == ReduceKind::kProd) v = (h & 1 ? -1 : 1) * (0.75 + 0.58 * unit);
  std::byte tmp[8];
  storeElement(tmp, 0, c.type, v);
  return loadElement(tmp, 0, c.type);
}

double unitRoundoff(DataType t) {
  switch (t) {
    case DataType::kFloat64:
      return 0x1.0p-53;
    case DataType::kFloat16:
      return 0x1.0p-11;
    case DataType::kBFloat16:
      return 0x1.0p-8;
    case DataType::kFloat8E4M3:
      return 0x1.0p-4;
    case DataType::kFloat8E5M2:
      return 0x1.0p-3;
    default:
      return 0x1.0p-24;
  }
}

// The float64 reference at input index i over n ranks, and the sum of the magnitudes it combined.
void reference(const RandomCase& c, int n, std::size_t i, double* ref, double* magnitudes) {
  *ref = foldFloat64(
      n, c.op, [&](int r) { return inputOf(c, r, i); }, magnitudes);
}

std::uint64_t hashBytes(const std::byte* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<std::uint64_t>(p[i])) * 1099511628211ull;
  return h;
}

const char* collName(RandomColl c) {
  switch (c) {
    case RandomColl::kAllreduce:
      return "allreduce";
    case RandomColl::kReduce:
      return "reduce";
    case RandomColl::kReduceScatter:
      return "reduce_scatter";
  }
  return "?";
}

}  // namespace

double allowedError(DataType type, ReduceKind op, int n, double sumOfMagnitudes, double reference) {
  const double u = unitRoundoff(type);
  // The subnormal spacing, per addition: below the smallest normal, roundings are absolute, not relative.
  const double spacing = type == DataType::kFloat16      ? 0x1.0p-24
                         : type == DataType::kFloat8E4M3 ? 0x1.0p-9
                         : type == DataType::kFloat8E5M2 ? 0x1.0p-16
                                                         : 0;
  const double tiny = n * spacing;
  switch (op) {
    case ReduceKind::kMin:
    case ReduceKind::kMax:
      return 0;
    case ReduceKind::kProd:
      return 2 * n * u * std::fabs(reference) + tiny;
    case ReduceKind::kAvg:
      return u * sumOfMagnitudes + 2 * u * std::fabs(reference) + tiny;  // the sum's bound divided by n
    default:
      return n * u * sumOfMagnitudes + u * std::fabs(reference) + tiny;
  }
}

std::string describe(const RandomCase& c) {
  std::string s = strCat(collName(c.coll), "(random ", dataTypeName(c.type), ", ", reduceKindName(c.op), ", count ",
                         c.count, ", seed ", c.seed);
  if (c.coll == RandomColl::kReduce) s += strCat(", root ", c.root);
  if (c.inPlace) s += ", in place";
  return s + ")";
}

void runRandomCase(Communicator& comm, const RandomCase& c) {
  const int n = comm.size(), me = comm.rank();
  const std::size_t esz = dataTypeSize(c.type);
  const bool scatter = c.coll == RandomColl::kReduceScatter;
  const std::size_t inCount = scatter ? c.count * static_cast<std::size_t>(n) : c.count;
  std::vector<std::byte> in(inCount * esz + 1), out(c.count * esz + 1, std::byte{0x7d});
  for (std::size_t i = 0; i < inCount; ++i) storeElement(in.data(), i, c.type, inputOf(c, me, i));
  // In place: reduce_scatter's result is this rank's block of the input.
  std::byte* recv = !c.inPlace ? out.data()
                    : scatter  ? in.data() + static_cast<std::size_t>(me) * c.count * esz
                               : in.data();
  switch (c.coll) {
    case RandomColl::kAllreduce:
      comm.allreduce(in.data(), recv, c.count, c.type, c.op);
      break;
    case RandomColl::kReduce:
      comm.reduce(in.data(), recv, c.count, c.type, c.op, c.root);
      break;
    case RandomColl::kReduceScatter:
      comm.reduceScatter(in.data(), recv, c.count, c.type, c.op);
      break;
  }
  const bool mine = c.coll != RandomColl::kReduce || me == c.root;
  if (mine) {
    const std::size_t base = scatter ? static_cast<std::size_t>(me) * c.count : 0;
    for (std::size_t j = 0; j < c.count; ++j) {
      double ref = 0, mags = 0;
      reference(c, n, base + j, &ref, &mags);
      const double got = loadElement(recv, j, c.type);
      const double allowed = allowedError(c.type, c.op, n, mags, ref);
      if (!(std::fabs(got - ref) <= allowed)) {
        throw std::runtime_error(strCat(describe(c), " on rank ", me, ": element ", j, " = ", got,
                                        ", float64 reference ", ref, ", error ", std::fabs(got - ref), " > allowed ",
                                        allowed));
      }
    }
  }
  if (c.coll == RandomColl::kAllreduce) {
    const std::uint64_t h = hashBytes(recv, c.count * esz);
    std::vector<std::uint64_t> all(static_cast<std::size_t>(n));
    comm.allgather(&h, all.data(), 1, DataType::kUint64);
    for (int r = 1; r < n; ++r) {
      if (all[static_cast<std::size_t>(r)] != all[0]) {
        throw std::runtime_error(strCat(describe(c), ": rank ", r, "'s result differs from rank 0's in its bits"));
      }
    }
  }
}

}  // namespace braid::testing
