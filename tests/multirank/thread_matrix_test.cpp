// The full collective x dtype x op x size matrix, ranks as threads over the in-memory transport.
#include <gtest/gtest.h>

#include "base/data_type.hpp"
#include "support/collective_cases.hpp"
#include "support/matrix.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

void runMatrix(Coll coll, int n, const Settings& settings) {
  EXPECT_EQ(failures(runThreads(n, matrixBody(coll, n), settings)), "");
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
