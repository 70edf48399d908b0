// Ranks over the TCP transport (BRAID_TRANSPORT=tcp on one host): the collective matrix as threads and a sampled
// matrix as processes, rejected and silent peers, flow control, and the transport choice itself (errors common to
// every transport are in errors_test.cpp, peer failures in tests/faults).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <latch>
#include <thread>

#include "algorithms/host/net/net_engine.hpp"
#include "core/communicator_impl.hpp"
#include "support/collective_cases.hpp"
#include "support/internals.hpp"
#include "support/matrix.hpp"
#include "support/rank_runner.hpp"
#include "transport/tcp/tcp_mesh.hpp"

namespace braid::testing {
namespace {

using namespace std::chrono_literals;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class TcpThreadMatrix : public ::testing::TestWithParam<std::tuple<Coll, int>> {};

TEST_P(TcpThreadMatrix, EveryTypeOpAndSize) {
  const auto [coll, n] = GetParam();
  EXPECT_EQ(failures(runThreads(n, matrixBody(coll, n), tcpSettings())), "");
}

INSTANTIATE_TEST_SUITE_P(Tcp, TcpThreadMatrix,
                         ::testing::Combine(::testing::ValuesIn(allColls()), ::testing::Values(2, 3, 4)),
                         [](const auto& info) {
                           return std::string(collName(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks";
                         });

// Small direct thresholds push mid-sized buffers through the ring and chain schedules, several segments each. One
// test per collective and rank count: under ThreadSanitizer the whole set takes longer than one test may.
class TcpRingSchedules : public ::testing::TestWithParam<std::tuple<Coll, int>> {};

TEST_P(TcpRingSchedules, EveryRankCount) {
  const auto [coll, n] = GetParam();
  Settings s = tcpSettings();
  s.directMaxBytes = 0;
  EXPECT_EQ(failures(runThreads(n, matrixBody(coll, n), s)), "");
}

INSTANTIATE_TEST_SUITE_P(Tcp, TcpRingSchedules,
                         ::testing::Combine(::testing::Values(Coll::kAllreduce, Coll::kReduce, Coll::kReduceScatter,
                                                              Coll::kBroadcast, Coll::kAllgather, Coll::kAllgatherv),
                                            ::testing::Values(2, 3, 5)),
                         [](const auto& info) {
                           return std::string(collName(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks";
                         });

// Small allreduces from 4 ranks on run recursive doubling; rank counts that are not powers of two fold ranks in
// and out of it.
TEST(TcpThreads, DoublingAllreduceWithFoldedRanks) {
  for (int n : {5, 6}) {
    EXPECT_EQ(failures(runThreads(n, matrixBody(Coll::kAllreduce, n), tcpSettings())), "") << n << " ranks";
  }
}

class TcpProcesses : public ::testing::TestWithParam<int> {};

TEST_P(TcpProcesses, SampledMatrix) {
  const int n = GetParam();
  const auto cases = sampledCases(n);
  auto results = runProcesses(
      n,
      [&](Communicator& comm) {
        require(std::string(comm.transportName()) == "tcp", "BRAID_TRANSPORT=tcp should give tcp");
        for (const Case& c : cases) runCase(comm, c);
        // Every stream goes out on a named interface of this host, each counted once.
        const std::string link = comm.linkDescription();
        require(link.rfind("TCP over ", 0) == 0 && link.find(" per peer)") != std::string::npos &&
                    link.find("(no peer)") == std::string::npos && link.find(':') == std::string::npos,
                "linkDescription: " + link);
      },
      180, "tcp");
  EXPECT_EQ(failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Tcp, TcpProcesses, ::testing::Values(3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST(TcpTransport, AutoPicksSharedMemoryOnOneHost) {
  auto results = runProcesses(
      2,
      [](Communicator& comm) {
        require(std::string(comm.transportName()) == "shm", "ranks of one host should share memory");
        require(comm.linkDescription() == "shared memory", "linkDescription: " + comm.linkDescription());
      },
      60, "auto");
  EXPECT_EQ(failures(results), "");
}

TEST(TcpErrors, RejectedArgumentsFailEveryRankFastAndTheNextCallWorks) {
  const auto start = std::chrono::steady_clock::now();
  auto results = runThreads(
      3,
      [](Communicator& comm) {
        int x = 1;
        try {
          comm.allreduce(&x, comm.rank() == 1 ? nullptr : &x, 1, DataType::kInt32, ReduceKind::kSum);
          throw std::runtime_error("allreduce with a rejecting peer did not fail");
        } catch (const Error& e) {
          if (comm.rank() == 1) {
            require(e.code() == ErrorCode::kInvalidArgument, e.what());
          } else {
            require(e.code() == ErrorCode::kMismatch && contains(e.what(), "rejected"), e.what());
          }
        }
        int y = comm.rank();
        comm.allreduce(&y, &y, 1, DataType::kInt32, ReduceKind::kSum);
        require(y == 3, "allreduce after a rejected call");
      },
      tcpSettings());
  EXPECT_EQ(failures(results), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(TcpErrors, SilentPeerTimesOutNamingIt) {
  Settings s = tcpSettings();
  s.timeoutSeconds = 0.5;
  std::latch done(1);
  auto results = runThreads(
      2,
      [&](Communicator& comm) {
        if (comm.rank() == 1) {  // alive and connected, but never joins the barrier
          done.wait();
          return;
        }
        try {
          comm.barrier();
        } catch (const Error& e) {
          done.count_down();
          require(e.code() == ErrorCode::kTimeout && e.context().peer == 1, e.what());
          return;
        }
        done.count_down();
        throw std::runtime_error("barrier without a peer did not time out");
      },
      s);
  EXPECT_EQ(failures(results), "");
}

}  // namespace
}  // namespace braid::testing

namespace braid::testing {
namespace {

// A broadcast root that runs calls ahead of a late receiver is held back by TCP's flow control once the receiver
// keeps kStashLimitBytes (64 MiB) aside for it, instead of filling the receiver's memory; then every call completes.
TEST(TcpFlowControl, ARootRunningAheadIsHeldBackAndEverythingArrives) {
  constexpr int kCalls = 40;
  constexpr std::size_t kCount = std::size_t{1} << 20;  // 4 MiB of float per call: 160 MiB in all
  auto results = runThreads(
      2,
      [&](Communicator& comm) {
        std::vector<float> buf(kCount);
        if (comm.rank() == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          auto* net = dynamic_cast<host::NetEngine*>(&test::implOf(comm).engine());
          require(net != nullptr, "BRAID_TRANSPORT=tcp should give the TCP engine");
          const std::size_t kept = dynamic_cast<tcp::TcpMesh&>(net->transport()).stashedBytes(0);
          require(kept <= (std::size_t{65} << 20), "kept " + std::to_string(kept) + " bytes aside for the root");
          require(kept >= (std::size_t{32} << 20),
                  "the root should have run ahead: " + std::to_string(kept) + " bytes");
        }
        for (int call = 0; call < kCalls; ++call) {
          if (comm.rank() == 0) std::fill(buf.begin(), buf.end(), static_cast<float>(call));
          comm.broadcast(buf.data(), buf.size(), DataType::kFloat32, 0);
          if (comm.rank() == 1 && (buf.front() != call || buf.back() != call)) {
            throw std::runtime_error("broadcast " + std::to_string(call) + " arrived wrong");
          }
        }
        comm.barrier();
      },
      tcpSettings());
  EXPECT_EQ(failures(results), "");
}

}  // namespace
}  // namespace braid::testing
