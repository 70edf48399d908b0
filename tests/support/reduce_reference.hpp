// Independent references for the tests of the CPU reduction kernels (algorithms/host/reduce_cpu.hpp), computed from
// scratch: rounding to each float format (the compiler's _Float16 for float16 where it has one, else one rounding by
// roundToFormat), typed buffers read and written through float64 and 64-bit integers, the expected fold of every
// type and operator, and inputs (exact sums; specials). Neither the kernels' conversions nor base/half.hpp and
// base/float8.hpp check themselves with these.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "algorithms/host/reduce_cpu.hpp"
#include "braid/types.hpp"
#include "support/float8_reference.hpp"

namespace braid::testing {

inline constexpr DataType kAllTypes[] = {
    DataType::kBool,    DataType::kInt8,       DataType::kUint8,     DataType::kInt32,    DataType::kUint32,
    DataType::kInt64,   DataType::kUint64,     DataType::kFloat16,   DataType::kBFloat16, DataType::kFloat32,
    DataType::kFloat64, DataType::kFloat8E4M3, DataType::kFloat8E5M2};
inline constexpr DataType kFloat8Types[] = {DataType::kFloat8E4M3, DataType::kFloat8E5M2};
inline constexpr ReduceKind kAllKinds[] = {ReduceKind::kSum,  ReduceKind::kProd, ReduceKind::kMin,
                                           ReduceKind::kMax,  ReduceKind::kAvg,  ReduceKind::kPremulSum,
                                           ReduceKind::kBand, ReduceKind::kBor,  ReduceKind::kBxor};

/// From the tests' own support table: a combination the library wrongly refused would still be run, and fail.
bool supported(DataType type, ReduceKind kind);

/// x rounded to nearest even with `precision` significant bits, normal exponents down to minExp (below that, the
/// last place stays at minExp - precision + 1: subnormals), overflowing to inf above maxFinite.
double roundToFormat(double x, int precision, int minExp, double maxFinite);
/// float16 and bfloat16 bits of a double, rounded once to nearest even (NaN: quiet, its sign kept), and back.
std::uint16_t halfBitsOf(double x);
double halfValue(std::uint16_t h);
inline constexpr double kBf16Max = 3.3895313892515355e38;  // (2 - 2^-7) * 2^127
std::uint16_t bf16BitsOf(double x);
double bf16Value(std::uint16_t b);

/// A buffer of `count` elements of one type.

struct Buffer {
  DataType type;
  std::vector<std::byte> bytes;
  Buffer(DataType t, std::size_t count) : type(t), bytes(count * dataTypeSize(t) + 1) {}  // +1: never empty
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  std::size_t count() const { return (bytes.size() - 1) / dataTypeSize(type); }

  template <typename T>
  T get(std::size_t i) const {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    return v;
  }
  template <typename T>
  void put(std::size_t i, T v) {
    std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
  }

  // Floats as float64 (exact).
  double getF(std::size_t i) const {
    switch (type) {
      case DataType::kFloat16:
        return halfValue(get<std::uint16_t>(i));
      case DataType::kBFloat16:
        return bf16Value(get<std::uint16_t>(i));
      case DataType::kFloat32:
        return get<float>(i);
      case DataType::kFloat8E4M3:
      case DataType::kFloat8E5M2:
        return fp8::decode(fp8::formatOf(type), get<std::uint8_t>(i));
      default:
        return get<double>(i);
    }
  }
  // Floats rounded to nearest even.
  void putF(std::size_t i, double v) {
    switch (type) {
      case DataType::kFloat16:
        return put<std::uint16_t>(i, halfBitsOf(v));
      case DataType::kBFloat16:
        return put<std::uint16_t>(i, bf16BitsOf(v));
      case DataType::kFloat32:
        return put<float>(i, static_cast<float>(v));
      case DataType::kFloat8E4M3:
      case DataType::kFloat8E5M2:
        return put<std::uint8_t>(i, fp8::encode(fp8::formatOf(type), v));
      default:
        return put<double>(i, v);
    }
  }
  // Integers as their value (sign-extended for signed types; uint64 as its bit pattern).
  std::int64_t getI(std::size_t i) const {
    switch (type) {
      case DataType::kBool:
      case DataType::kUint8:
        return get<std::uint8_t>(i);
      case DataType::kInt8:
        return get<std::int8_t>(i);
      case DataType::kInt32:
        return get<std::int32_t>(i);
      case DataType::kUint32:
        return get<std::uint32_t>(i);
      default:
        return get<std::int64_t>(i);
    }
  }
  // Integers truncated to the type's width (wraps); on float types, a raw bit pattern.
  void putI(std::size_t i, std::uint64_t v) {
    switch (dataTypeSize(type)) {
      case 1:
        return put<std::uint8_t>(i, static_cast<std::uint8_t>(v));
      case 2:
        return put<std::uint16_t>(i, static_cast<std::uint16_t>(v));
      case 4:
        return put<std::uint32_t>(i, static_cast<std::uint32_t>(v));
      default:
        return put<std::uint64_t>(i, v);
    }
  }
  bool sameBits(const Buffer& o) const { return bytes == o.bytes; }
};

/// Element i's bytes, for messages.
std::string hexOf(const Buffer& b, std::size_t i);
/// The first `n` buffers' addresses, as reduceSources takes its sources.
std::vector<const void*> pointers(const std::vector<Buffer>& srcs, int n);
/// The sources folded in order in T: product, min and max by the documented rule (NaN propagates; between equal
/// values the later wins), every other operator a sum (avg's division and premul_sum's scaling are the caller's).
template <typename T>
T foldInOrder(ReduceKind kind, const std::vector<T>& xs) {
  T acc = xs[0];
  for (std::size_t s = 1; s < xs.size(); ++s) {
    const T x = xs[s];
    if (kind == ReduceKind::kProd) {
      acc = acc * x;
    } else if (kind == ReduceKind::kMin) {
      acc = (acc < x || acc != acc) ? acc : x;
    } else if (kind == ReduceKind::kMax) {
      acc = (acc > x || acc != acc) ? acc : x;
    } else {
      acc = acc + x;
    }
  }
  return acc;
}
/// Float fold in float64 (foldInOrder), an average divided once at the end.
double refFloat(ReduceKind kind, const std::vector<double>& xs, int avgDivisor);
bool isSignedInt(DataType t);
/// Integer fold modulo 2^64, truncated to the type's width by putI.
std::uint64_t refInt(DataType type, ReduceKind kind, const std::vector<std::int64_t>& xs, int avgDivisor);
/// Expected output of element i, in the output type's bits.
void putReference(Buffer& out, std::size_t i, const std::vector<Buffer>& srcs, int nsrcs, ReduceKind kind,
                  int avgDivisor);
/// Exact-sum inputs: every sum, product, average and min/max of them is exact in every type (nccl-tests' method).
void fillExact(Buffer& b, ReduceKind kind, std::mt19937_64& rng);
/// Random values including specials (NaN, inf, subnormals, signed zeros), for the cross-ISA comparison.
void fillWild(Buffer& b, std::mt19937_64& rng);

/// Scales whose product with one lands on every rounding boundary of float16 and bfloat16 (ties, the largest
/// finite values and the overflow above them, subnormals), then `randomPairs` pairs of random ones (any finite bit
/// pattern; small mantissas over a range of exponents): the CPU and GPU scaleCopy tests take the same list.
std::vector<float> halfRoundingScales(int randomPairs);

/// The kernels' tests: each leaves the kernel set as it found it (automatic).
class ReduceCpu : public ::testing::Test {
 protected:
  void TearDown() override { host::setReduceIsaCap("auto"); }
};

}  // namespace braid::testing
