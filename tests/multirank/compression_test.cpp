// BRAID_COMPRESS=bf16: float32 sums and averages between hosts travel as bfloat16, are added in float32,
// stay within the documented error bound, and come out bitwise identical on every rank; everything else is exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/communicator_impl.hpp"
#include "support/collective_cases.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

Settings compressed() {
  Settings s = tcpSettings();
  s.compress = "bf16";
  return s;
}

float input(int rank, std::size_t i) { return std::sin(static_cast<float>(i) * 0.37f + rank) * (1.0f + rank); }

std::uint64_t hashOf(const std::vector<float>& v) {
  std::uint64_t h = 1469598103934665603ull;
  for (float x : v) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, 4);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

void checkCompressedAllreduce(Communicator& comm, ReduceKind kind, bool inPlace) {
  const std::size_t count = 300007;  // 1.2 MB: the ring, with a last block shorter than the others
  const int n = comm.size();
  std::vector<float> buf(count), in(count);
  for (std::size_t i = 0; i < count; ++i) in[i] = buf[i] = input(comm.rank(), i);
  comm.allreduce(inPlace ? buf.data() : in.data(), buf.data(), count, DataType::kFloat32, kind);
  for (std::size_t i = 0; i < count && !inPlace; ++i) require(in[i] == input(comm.rank(), i), "the input changed");
  std::size_t rounded = 0;
  for (std::size_t i = 0; i < count; ++i) {
    double exact = 0, magnitude = 0;
    for (int r = 0; r < n; ++r) {
      exact += input(r, i);
      magnitude += std::fabs(input(r, i));
    }
    if (kind == ReduceKind::kAvg) {
      exact /= n;
      magnitude /= n;
    }
    const double error = std::fabs(buf[i] - exact);
    require(error <= n * std::ldexp(magnitude, -8) + 1e-30, "element " + std::to_string(i) + ": " +
                                                                std::to_string(buf[i]) + " against " +
                                                                std::to_string(exact) + ", beyond the bound");
    rounded += static_cast<float>(exact) != buf[i];
  }
  require(rounded > count / 4, "only " + std::to_string(rounded) + " elements differ from float32: not compressed?");
  const std::uint64_t mine = hashOf(buf);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(n));
  comm.allgather(&mine, all.data(), 1, DataType::kUint64);
  for (int r = 0; r < n; ++r) require(all[r] == mine, "rank " + std::to_string(r) + "'s result differs from mine");
}

TEST(Compression, Bf16WireStaysWithinItsBoundAndIdenticalOnEveryRank) {
  for (int ranks : {2, 3, 4}) {
    const auto results = runThreads(
        ranks,
        [](Communicator& comm) {
          require(comm.allreduceAlgorithm(std::size_t{1} << 20).find("bf16") != std::string::npos,
                  "allreduceAlgorithm does not say bf16: " + comm.allreduceAlgorithm(std::size_t{1} << 20));
          checkCompressedAllreduce(comm, ReduceKind::kSum, true);
          checkCompressedAllreduce(comm, ReduceKind::kAvg, true);
          checkCompressedAllreduce(comm, ReduceKind::kSum, false);
          // What is not a float32 sum or average stays exact.
          for (const DataType type : {DataType::kInt32, DataType::kFloat32, DataType::kFloat64}) {
            runCase(comm, Case{Coll::kAllreduce, type, type == DataType::kFloat32 ? ReduceKind::kMax : ReduceKind::kSum,
                               100003});
          }
        },
        compressed());
    EXPECT_EQ(failures(results), "") << ranks << " ranks";
  }
}

TEST(Compression, AnUnknownCodecIsRefusedByName) {
  Settings s = tcpSettings();
  s.compress = "zstd";
  const std::string f = failures(runThreads(
      2, [](Communicator&) {}, s));
  EXPECT_NE(f.find("BRAID_COMPRESS=zstd"), std::string::npos) << f;
}

}  // namespace
}  // namespace braid::testing
