// Ranks as forked processes over POSIX shared memory: a sampled matrix (every collective, every dtype, sizes up
// to 16 MiB, in place and out of place), creation from the environment, and what shm leaves behind.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "base/data_type.hpp"
#include "core/communicator_impl.hpp"
#include "support/collective_cases.hpp"
#include "support/free_port.hpp"
#include "support/internals.hpp"
#include "support/matrix.hpp"
#include "support/rank_runner.hpp"
#include "transport/shm/shm_local_group.hpp"

namespace braid::testing {
namespace {

class ProcessShm : public ::testing::TestWithParam<int> {};

TEST_P(ProcessShm, SampledMatrix) {
  const int n = GetParam();
  const auto cases = sampledCases(n);
  auto results = runProcesses(n, [&](Communicator& comm) {
    for (const Case& c : cases) runCase(comm, c);
  });
  EXPECT_EQ(failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Shm, ProcessShm, ::testing::Values(2, 3, 8),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST(ProcessShm, SegmentsAreUnlinkedOnceEveryRankMappedThem) {
  auto results = runProcesses(3, [&](Communicator& comm) {
    comm.barrier();  // creation finished on every rank: every name of this communicator must be gone by now
    auto* group = dynamic_cast<transport::ShmLocalGroup*>(test::implOf(comm).localGroup());
    require(group != nullptr, "ranks as processes should use shared memory");
    for (const auto& name : group->segmentNames()) {
      require(::access(("/dev/shm" + name).c_str(), F_OK) != 0, name + " left in /dev/shm after creation");
    }
    int x = comm.rank();
    comm.allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
    require(x == 3, "allreduce after unlinking");
  });
  EXPECT_EQ(failures(results), "");
}

// Ranks tell each other their hosts at creation: one host here, so every rank is local, in rank order; a split
// communicator learns its own placement.
void requireOneHost(Communicator& comm, const std::string& what) {
  require(comm.hostCount() == 1, what + ": " + std::to_string(comm.hostCount()) + " hosts, expected 1");
  require(comm.localRank() == comm.rank() && comm.localSize() == comm.size(),
          what + ": local rank " + std::to_string(comm.localRank()) + " of " + std::to_string(comm.localSize()));
  for (int r = 0; r < comm.size(); ++r) {
    require(comm.hostOf(r) == 0 && comm.hostName(r) == comm.hostName(comm.rank()),
            what + ": host of rank " + std::to_string(r));
  }
  bool refused = false;
  try {
    (void)comm.hostOf(comm.size());
  } catch (const Error& e) {
    refused = e.code() == ErrorCode::kInvalidArgument;
  }
  require(refused, what + ": hostOf(size) must be refused");
}

TEST(ProcessShm, RanksKnowTheirHostsAndLocalRanks) {
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof name - 1), 0);
  const std::string host = name;
  auto results = runProcesses(3, [&](Communicator& comm) {
    requireOneHost(comm, "processes");
    require(comm.hostName(0) == host, "host name " + comm.hostName(0) + ", expected " + host);
    auto half = comm.split(comm.rank() % 2, comm.rank());
    requireOneHost(*half, "split");
  });
  EXPECT_EQ(failures(results), "");
  EXPECT_EQ(failures(runThreads(3, [](Communicator& comm) { requireOneHost(comm, "thread ranks"); })), "");
  EXPECT_EQ(failures(runThreads(
                2, [](Communicator& comm) { requireOneHost(comm, "thread ranks over tcp"); }, tcpSettings())),
            "");
}

// The usual pattern: make a unique id (its store starts a thread), then fork the ranks. The children must never
// inherit a lock that thread held (OpenSSL's, while it authenticates earlier children): seen once as a hang.
TEST(ProcessShm, ForkingRanksRightAfterMakingTheIdNeverHangs) {
  for (int round = 0; round < 20; ++round) {
    auto results = runProcesses(
        8, [](Communicator& comm) { comm.barrier(); }, 30);
    ASSERT_EQ(failures(results), "") << "round " << round;
  }
}

// Ranks a launcher bound to different CPUs of one host still weigh one machine (the CPUs they may use together,
// traded at creation), so their selectors choose alike at every size: a rank choosing another algorithm than its
// peers would fail the call, or wait for them until the timeout.
TEST(ProcessShm, RanksBoundToDifferentCpusChooseAlike) {
  cpu_set_t all;
  ASSERT_EQ(::sched_getaffinity(0, sizeof all, &all), 0);
  int last = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &all)) last = c;
  }
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one CPU: nothing to bind apart";
  constexpr int kRanks = 4;
  auto results = runProcessesWith(
      kRanks,
      [&](int r) {
        // Runs in the rank's process, before it creates its communicator: rank 0 keeps every CPU, the others one.
        if (r != 0) {
          cpu_set_t one;
          CPU_ZERO(&one);
          CPU_SET(last, &one);
          require(::sched_setaffinity(0, sizeof one, &one) == 0, "sched_setaffinity");
        }
        return testSettings();
      },
      [&](Communicator& comm) {
        std::string choices;
        for (double b = 8; b <= 4 << 20; b *= 1.19) {
          choices += comm.allreduceAlgorithm(static_cast<std::size_t>(b), Memory::kHost) + ",";
        }
        std::uint64_t mine = std::hash<std::string>{}(choices);
        std::vector<std::uint64_t> all(kRanks);
        comm.allgather(&mine, all.data(), 1, DataType::kUint64);
        for (int r = 0; r < kRanks; ++r) {
          require(all[r] == mine, "rank " + std::to_string(r) + " chose otherwise than rank " +
                                      std::to_string(comm.rank()) + " (" + choices + ")");
        }
        std::vector<float> x(300 * 1024, 1.0f);
        comm.allreduce(x.data(), x.data(), x.size(), DataType::kFloat32, ReduceKind::kSum);
        require(x.front() == kRanks && x.back() == kRanks, "allreduce after the choice");
      });
  EXPECT_EQ(failures(results), "");
}

TEST(ProcessShm, CreatesFromTheLaunchEnvironment) {
  // Rank 0 serves the rendezvous at BRAID_ROOT_ADDR; the others connect there.
  const int port = freePort();
  auto results = runProcesses(1, [&](Communicator&) {
    // Inside one child, start 4 grandchildren with the environment a launcher would set.
    std::vector<pid_t> kids;
    for (int r = 0; r < 4; ++r) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::setenv("BRAID_RANK", std::to_string(r).c_str(), 1);
        ::setenv("BRAID_WORLD_SIZE", "4", 1);
        ::setenv("BRAID_ROOT_ADDR", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
        ::setenv("BRAID_TOKEN", "5ec7e7000f7415be575ec7e7000f7415", 1);
        int ok = 0;
        try {
          auto comm = Communicator::fromEnvironment();
          int v = comm->rank() + 1;
          comm->allreduce(&v, &v, 1, DataType::kInt32, ReduceKind::kSum);
          ok = v == 10 && comm->size() == 4;
        } catch (...) {
        }
        ::_exit(ok ? 0 : 1);
      }
      kids.push_back(pid);
    }
    for (pid_t pid : kids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      require(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a rank started from the environment failed");
    }
  });
  EXPECT_EQ(failures(results), "");
}

}  // namespace
}  // namespace braid::testing

namespace braid::testing {
namespace {

// The whole matrix over processes: long (minutes), so it runs when BRAID_FULL_MATRIX=1 (scripts/full-matrix.sh).
class ProcessFullMatrix : public ::testing::TestWithParam<std::tuple<Coll, int>> {};

TEST_P(ProcessFullMatrix, EveryTypeOpAndSize) {
  const auto [coll, n] = GetParam();
  EXPECT_EQ(failures(runProcesses(n, matrixBody(coll, n), 1800)), "");
}

// Instantiated only when asked for, so that ctest does not list them as skipped.
std::vector<std::tuple<Coll, int>> fullMatrixParams() {
  std::vector<std::tuple<Coll, int>> params;
  if (!std::getenv("BRAID_FULL_MATRIX")) return params;
  for (Coll c : allColls()) {
    for (int n : {1, 2, 3, 4, 8}) params.emplace_back(c, n);
  }
  return params;
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ProcessFullMatrix);
INSTANTIATE_TEST_SUITE_P(Full, ProcessFullMatrix, ::testing::ValuesIn(fullMatrixParams()), [](const auto& info) {
  return std::string(collName(std::get<0>(info.param))) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
});

}  // namespace
}  // namespace braid::testing
