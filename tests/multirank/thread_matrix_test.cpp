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

// Helper threads (BRAID_SHM_THREADS=3, as many of them as the CPUs allow) over the collectives whose passes they cut
// (rsag's allreduce and reduce, reduce-scatter, allgather): slots large enough that the passes are cut into pieces,
// which the threads of each rank take in whatever order they come; then allreduce with every output streamed.
class ThreadHelpers : public ::testing::TestWithParam<int> {};

TEST_P(ThreadHelpers, EveryCutCollective) {
  const int n = GetParam();
  Settings s = testSettings();
  s.algo = "rsag";
  s.shmThreads = "3";
  s.shmSlotBytes = 256 << 10;
  for (Coll c : {Coll::kAllreduce, Coll::kReduce, Coll::kReduceScatter, Coll::kAllgather}) runMatrix(c, n, s);
  s.shmStreamBytes = "0";
  runMatrix(Coll::kAllreduce, n, s);
}

INSTANTIATE_TEST_SUITE_P(Helpers, ThreadHelpers, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// Every collective with every output streamed (BRAID_SHM_STREAM_BYTES=0), both allreduce algorithms, small slots:
// outputs at every alignment the matrix's sizes give, written with non-temporal stores, read back by the checks.
class ThreadStreamed : public ::testing::TestWithParam<std::tuple<Coll, int>> {};

TEST_P(ThreadStreamed, EveryTypeOpAndSize) {
  const auto [coll, n] = GetParam();
  Settings s = testSettings();
  s.shmStreamBytes = "0";
  s.shmSlotBytes = 64 << 10;
  // Each allreduce algorithm at every size, whichever the selector would take: rsag on 2 ranks, direct on 3.
  if (coll == Coll::kAllreduce) s.algo = n == 2 ? "rsag" : "direct";
  runMatrix(coll, n, s);
}

// The collectives with an output of their own (point-to-point and barrier have none to stream).
std::vector<Coll> collsWithOutput() {
  std::vector<Coll> colls;
  for (Coll c : allColls()) {
    if (c != Coll::kSendRecv && c != Coll::kGroupAllPairs && c != Coll::kBarrier) colls.push_back(c);
  }
  return colls;
}

INSTANTIATE_TEST_SUITE_P(Streamed, ThreadStreamed,
                         ::testing::Combine(::testing::ValuesIn(collsWithOutput()), ::testing::Values(2, 3)),
                         paramName);

}  // namespace
}  // namespace braid::testing

namespace braid::testing {
namespace {

// What the communicator runs is what its selector says, for the rank count: every rank answers alike, 8 B go
// direct and 4 MiB rsag by the cost model on 2 and 4 ranks, and BRAID_ALGO shows as forced.
TEST(ThreadSelector, TheCommunicatorRunsAndExplainsTheSelectorsChoice) {
  for (int n : {2, 4}) {
    const auto body = [](Communicator& comm) {
      for (const std::size_t bytes : {std::size_t{8}, std::size_t{4} << 20}) {
        const bool large = bytes > 8;
        const std::string text = comm.explain(bytes);
        require(text.find(large ? "rsag: cost model" : "direct: cost model") != std::string::npos,
                "explain says: " + text);
        require(comm.allreduceAlgorithm(bytes).find(large ? "/rsag" : "/direct") != std::string::npos,
                "allreduceAlgorithm says " + comm.allreduceAlgorithm(bytes));
      }
    };
    EXPECT_EQ(failures(runThreads(n, body)), "") << n << " ranks";
  }
  Settings forced = testSettings();
  forced.algo = "rsag";
  const auto body = [](Communicator& comm) {
    const std::string text = comm.explain(8);
    require(text.find("rsag: forced by BRAID_ALGO") != std::string::npos, "explain says: " + text);
  };
  EXPECT_EQ(failures(runThreads(3, body, forced)), "");
}

}  // namespace
}  // namespace braid::testing
