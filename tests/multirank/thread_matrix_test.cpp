// The full collective x dtype x op x size matrix, ranks as threads over the in-memory transport.
#include <gtest/gtest.h>

#include "base/data_type.hpp"
#include "support/collective_cases.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

constexpr std::size_t kSizes[] = {0, 1, 7, 1023, (1u << 20) + 3};

// Collectives whose count is per block of a size()-block buffer use count/size for the largest size, so every
// case moves about the same bytes per rank.
bool perBlock(Coll c) {
  return c == Coll::kAllgather || c == Coll::kGather || c == Coll::kScatter || c == Coll::kAlltoall ||
         c == Coll::kAlltoallv || c == Coll::kReduceScatter || c == Coll::kAllgatherv || c == Coll::kGroupAllPairs;
}

void runMatrix(Coll coll, int n, const Settings& settings) {
  auto results = runThreads(
      n,
      [&](Communicator& comm) {
        int variant = 0;
        for (int t = 0; t < kNumDataTypes; ++t) {
          const auto type = static_cast<DataType>(t);
          const auto ops = reduces(coll) ? opsFor(type) : std::vector<ReduceKind>{ReduceKind::kSum};
          for (ReduceKind op : ops) {
            for (std::size_t size : kSizes) {
              const bool big = size > 4096;
              const std::size_t count = big && perBlock(coll) ? size / n + 1 : size;
              for (bool inPlace : {false, true}) {
                if (inPlace && (!supportsInPlace(coll) || big)) continue;
                ++variant;
                Case c{coll, type, op, count, inPlace, variant % n, variant % 3 == 0};
                runCase(comm, c);
              }
            }
          }
        }
      },
      settings);
  EXPECT_EQ(failures(results), "");
}

class ThreadMatrix : public ::testing::TestWithParam<std::tuple<Coll, int>> {};

TEST_P(ThreadMatrix, EveryTypeOpAndSize) {
  const auto [coll, n] = GetParam();
  runMatrix(coll, n, testSettings());
}

std::string paramName(const ::testing::TestParamInfo<std::tuple<Coll, int>>& info) {
  return std::string(collName(std::get<0>(info.param))) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Matrix, ThreadMatrix,
                         ::testing::Combine(::testing::ValuesIn(allColls()), ::testing::Values(1, 2, 3, 4, 8)),
                         paramName);

// Both allreduce algorithms over every case, with small slots so that large buffers take many rounds.
class ThreadAlgorithms : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ThreadAlgorithms, AllreduceAndReduceMatrix) {
  const auto [algo, n] = GetParam();
  Settings s = testSettings();
  s.algo = algo;
  s.shmSlotBytes = 64 << 10;
  runMatrix(Coll::kAllreduce, n, s);
  runMatrix(Coll::kReduce, n, s);
}

INSTANTIATE_TEST_SUITE_P(Forced, ThreadAlgorithms,
                         ::testing::Combine(::testing::Values("direct", "rsag"), ::testing::Values(2, 3, 8)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
                         });

}  // namespace
}  // namespace braid::testing
