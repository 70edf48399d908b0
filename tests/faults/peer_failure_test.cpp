// Failure semantics (issue 5): a peer that is killed, stopped or exits mid-collective becomes PeerLost naming it on
// every other rank within the stated bounds; abort() from another thread ends calls at once on every rank;
// mismatched calls fail with Mismatch on every rank. Over shared memory and TCP, 3 and 4 ranks as processes, each
// test under a hard wall-clock limit so that a hang fails it instead of stalling CI.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "support/collective_cases.hpp"
#include "support/error_names.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Heartbeats fast enough for a test: 0.2 s apart, 2 s of silence is a stopped peer.
Settings faultSettings(const std::string& transport) {
  Settings s = testSettings();
  s.transport = transport;
  s.heartbeatIntervalSeconds = 0.2;
  s.heartbeatTimeoutSeconds = 2;
  s.timeoutSeconds = 60;  // far above every bound checked here: a PeerLost must come from detection, not timeout
  return s;
}

enum class Fault { kKilled, kStopped, kExited };

const char* faultName(Fault f) { return f == Fault::kKilled ? "killed" : f == Fault::kStopped ? "stopped" : "exited"; }

using Param = std::tuple<Fault, std::string, int>;

class PeerFailure : public ::testing::TestWithParam<Param> {};

TEST_P(PeerFailure, EveryOtherRankGetsPeerLostNamingItInTime) {
  const auto [fault, transport, n] = GetParam();
  const int victim = 1;
  // Killed or exited: the process is gone, its sockets close and its pidfd fires: 5 s. Stopped: nothing closes,
  // only its heartbeats stop: heartbeat timeout + 1 s.
  const auto bound = fault == Fault::kStopped ? 3s : 5s;
  auto results = runProcessesWith(
      n, faultSettings(transport),
      [&, fault = fault](Communicator& comm) {
        std::int64_t mine = ::getpid();
        std::vector<std::int64_t> pids(static_cast<std::size_t>(comm.size()));
        comm.allgather(&mine, pids.data(), 1, DataType::kInt64);
        std::vector<float> big(1 << 18, 1.0f);  // 1 MiB: several messages or rounds per call
        comm.allreduce(big.data(), big.data(), big.size(), DataType::kFloat32, ReduceKind::kSum);
        if (comm.rank() == victim) {
          std::thread([fault] {
            std::this_thread::sleep_for(20ms);
            if (fault == Fault::kKilled) ::kill(::getpid(), SIGKILL);
            if (fault == Fault::kStopped) {
              ::kill(::getpid(), SIGSTOP);  // takes effect a moment later: wait here until it does (and for good)
              for (;;) ::pause();
            }
            ::_exit(0);  // exits at once, as a clean exit would, in the middle of the collective
          }).detach();
        }
        const auto start = Clock::now();
        try {
          for (int i = 0; i < 100000; ++i) {
            comm.allreduce(big.data(), big.data(), big.size(), DataType::kFloat32, ReduceKind::kSum);
          }
        } catch (const Error& e) {
          const auto took = Clock::now() - start;
          if (comm.rank() == 0 && fault == Fault::kStopped) ::kill(static_cast<pid_t>(pids[victim]), SIGKILL);
          require(e.code() == ErrorCode::kPeerLost, std::string("expected PeerLost: ") + e.what());
          require(namesRank(e, victim), std::string("the error should name peer 1: ") + e.what());
          require(took < bound, std::string("PeerLost came after ") +
                                    std::to_string(std::chrono::duration<double>(took).count()) + " s: " + e.what());
          return;
        }
        throw std::runtime_error("collectives with a failed peer did not fail");
      },
      60);
  for (int r = 0; r < n; ++r) {
    if (r != victim) {
      EXPECT_EQ(results[r], "") << "rank " << r << " (" << faultName(fault) << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, PeerFailure,
                         ::testing::Combine(::testing::Values(Fault::kKilled, Fault::kStopped, Fault::kExited),
                                            ::testing::Values("shm", "tcp"), ::testing::Values(3, 4)),
                         [](const auto& info) {
                           return std::string(faultName(std::get<0>(info.param))) + "_" + std::get<1>(info.param) +
                                  "_" + std::to_string(std::get<2>(info.param)) + "ranks";
                         });

// Ranks 0 and 1 on one "host", 2 and 3 on another (BRAID_HOST_ID), every allreduce hierarchical.
Settings twoHostsOfTwo(int rank) {
  Settings s = faultSettings("auto");
  s.hostId = "h" + std::to_string(rank / 2);
  s.hierarchy = "on";
  return s;
}

// The hierarchical allreduce (two "hosts" of two by BRAID_HOST_ID): the ranks that share a level with the one that
// exits learn it directly; the others wait on them in another level or step, and learn it because a rank whose
// step failed closes both its levels. So every survivor fails within seconds, not at its timeout.
TEST(HierarchyPeerFailure, EveryOtherRankFailsInTimeNamingAPeer) {
  const int victim = 3;
  auto results = runProcessesWith(
      4, twoHostsOfTwo,
      [&](Communicator& comm) {
        std::vector<float> big(1 << 18, 1.0f);
        comm.allreduce(big.data(), big.data(), big.size(), DataType::kFloat32, ReduceKind::kSum);
        require(comm.allreduceAlgorithm(big.size() * 4).rfind("hierarchical", 0) == 0,
                "not hierarchical: " + comm.allreduceAlgorithm(big.size() * 4));
        if (comm.rank() == victim) {
          std::thread([] {
            std::this_thread::sleep_for(20ms);
            ::_exit(0);
          }).detach();
        }
        const auto start = Clock::now();
        std::string outcome = "collectives with a failed peer did not fail";
        try {
          for (int i = 0; i < 100000; ++i) {
            comm.allreduce(big.data(), big.data(), big.size(), DataType::kFloat32, ReduceKind::kSum);
          }
        } catch (const Error& e) {
          const auto took = Clock::now() - start;
          // The peer as the communicator numbers it, not as the level that failed does.
          const int peer = e.context().peer;
          const bool named = peer >= 0 && peer < comm.size() && peer != comm.rank();
          outcome = e.code() != ErrorCode::kPeerLost                ? std::string("expected PeerLost: ")
                    : !contains(e.what(), "hierarchical allreduce") ? std::string("the error should name the step: ")
                    : !named                                        ? std::string("the error should name a peer: ")
                    : took > 2s
                        ? "PeerLost came after " + std::to_string(std::chrono::duration<double>(took).count()) + " s: "
                        : std::string();
          if (!outcome.empty()) outcome += e.what();
        }
        std::this_thread::sleep_for(4s);  // alive, its sockets open, while the others wait to learn
        require(outcome.empty(), outcome);
        // The communicator is broken: a later call of any kind says so at once.
        try {
          int x = 1;
          comm.allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
        } catch (const Error& e) {
          require(contains(e.what(), "unusable after an earlier failure"), std::string("later call: ") + e.what());
          return;
        }
        throw std::runtime_error("an allreduce after the failure succeeded");
      },
      90);
  for (int r = 0; r < 4; ++r) {
    if (r != victim) {
      EXPECT_EQ(results[r], "") << "rank " << r;
    }
  }
}

// A rank whose count differs from its host's: the ranks inside that host fail with Mismatch, those of the other host
// learn it as a lost peer when the first close their levels, and every rank's communicator is then broken alike, so
// no rank goes on to wait for one that stopped. The first host's ranks may close their levels while the second's
// still finish the matched call before, whose last messages they had sent: those fail in that call.
TEST(HierarchyMismatch, FailsOnEveryRankAndBreaksEveryCommunicator) {
  auto results = runProcessesWith(
      4, twoHostsOfTwo,
      [&](Communicator& comm) {
        std::vector<float> big(1 << 16, 1.0f);
        const auto start = Clock::now();
        try {
          comm.allreduce(big.data(), big.data(), big.size(), DataType::kFloat32, ReduceKind::kSum);
          comm.allreduce(big.data(), big.data(), big.size() - (comm.rank() == 0 ? 64 : 0), DataType::kFloat32,
                         ReduceKind::kSum);
          throw std::runtime_error("an allreduce of mismatched counts succeeded");
        } catch (const Error& e) {
          const bool host0 = comm.rank() < 2;
          require(e.code() == (host0 ? ErrorCode::kMismatch : ErrorCode::kPeerLost),
                  std::string(host0 ? "expected Mismatch: " : "expected PeerLost: ") + e.what());
          require(Clock::now() - start < 2s, std::string("the failure took over 2 s: ") + e.what());
        }
        try {
          comm.allgather(big.data(), big.data() + 4, 1, DataType::kFloat32);
        } catch (const Error& e) {
          require(contains(e.what(), "unusable after an earlier failure"), std::string("later call: ") + e.what());
          require(Clock::now() - start < 2s, std::string("the later call took over 2 s: ") + e.what());
          return;
        }
        throw std::runtime_error("an allgather after the failure succeeded");
      },
      90);
  EXPECT_EQ(failures(results), "");
}

// Counts that differ across the hierarchy's crossover send some ranks into its levels and the others down the flat
// path, each waiting for ranks that never come. Both sides end at the timeout, one timeout in all, and say that a
// mismatch across BRAID_HIERARCHY_MIN_BYTES ends this way.
TEST(HierarchyMismatch, AcrossTheCrossoverTimesOutSayingWhy) {
  auto results = runProcessesWith(
      4,
      [](int rank) {
        Settings s = faultSettings("auto");
        s.hostId = "h" + std::to_string(rank / 2);
        s.hierarchy = "auto";
        s.hierarchyMinBytes = 4096;
        s.timeoutSeconds = 2;
        return s;
      },
      [&](Communicator& comm) {
        std::vector<float> v(1024, 1.0f);  // 4 KiB: hierarchical; rank 0 alone sends 64 B, flat
        const auto start = Clock::now();
        try {
          comm.allreduce(v.data(), v.data(), comm.rank() == 0 ? 16 : v.size(), DataType::kFloat32, ReduceKind::kSum);
          throw std::runtime_error("an allreduce of mismatched counts succeeded");
        } catch (const Error& e) {
          require(e.code() == ErrorCode::kTimeout || e.code() == ErrorCode::kPeerLost,
                  std::string("expected Timeout, or PeerLost from a rank that timed out: ") + e.what());
          if (e.code() == ErrorCode::kTimeout) {
            require(contains(e.what(), "BRAID_HIERARCHY_MIN_BYTES"),
                    std::string("no word of the crossover: ") + e.what());
          }
          require(Clock::now() - start < 10s, std::string("the failure took over 10 s: ") + e.what());
        }
      },
      90);
  EXPECT_EQ(failures(results), "");
}

// After a kill, the survivors shrink to a communicator of themselves and go on; whichever rank died, rank 0 (which
// served the first communicator's store) included.
class Shrink : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(Shrink, SurvivorsOfAKillFormANewCommunicatorAndAllreduce) {
  const auto [transport, victim] = GetParam();
  auto results = runProcessesWith(
      4, faultSettings(transport),
      [victim = victim](Communicator& comm) {
        comm.barrier();
        if (comm.rank() == victim) {
          std::this_thread::sleep_for(20ms);
          ::kill(::getpid(), SIGKILL);
        }
        try {
          std::vector<float> big(1 << 16, 1.0f);
          for (int i = 0; i < 100000; ++i) {
            comm.allreduce(big.data(), big.data(), big.size(), DataType::kFloat32, ReduceKind::kSum);
          }
          throw std::runtime_error("collectives with a killed peer did not fail");
        } catch (const Error& e) {
          require(e.code() == ErrorCode::kPeerLost, e.what());
        }
        const auto start = Clock::now();
        auto survivors = comm.shrink();
        require(survivors->size() == 3, "shrink kept " + std::to_string(survivors->size()) + " ranks");
        const int expected = comm.rank() - (comm.rank() > victim ? 1 : 0);
        require(survivors->rank() == expected, "new rank " + std::to_string(survivors->rank()));
        int x = comm.rank() + 1;
        survivors->allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
        require(x == 1 + 2 + 3 + 4 - (victim + 1), "allreduce among the survivors gave " + std::to_string(x));
        survivors->barrier();
        require(Clock::now() - start < 10s, "shrink took too long");
      },
      60);
  for (int r = 0; r < 4; ++r) {
    if (r != std::get<1>(GetParam())) {
      EXPECT_EQ(results[r], "") << "rank " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, Shrink, ::testing::Combine(::testing::Values("shm", "tcp"), ::testing::Values(0, 2)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_victim" + std::to_string(std::get<1>(info.param));
                         });

// A slow peer is not a dead one: it is waited for (up to the operation timeout), heartbeats or not.
class SlowPeer : public ::testing::TestWithParam<std::string> {};

TEST_P(SlowPeer, IsWaitedForBeyondTheHeartbeatTimeout) {
  auto results = runProcessesWith(3, faultSettings(GetParam()), [](Communicator& comm) {
    if (comm.rank() == 2) std::this_thread::sleep_for(3500ms);  // computing, longer than the 2 s heartbeat timeout
    int x = 1;
    comm.allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
    require(x == 3, "allreduce with a slow peer");
  });
  EXPECT_EQ(failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Faults, SlowPeer, ::testing::Values("shm", "tcp"));

class Abort : public ::testing::TestWithParam<std::string> {};

TEST_P(Abort, FromAnotherThreadEndsTheCallOnEveryRankWithinTwoSeconds) {
  auto results = runProcessesWith(3, faultSettings(GetParam()), [](Communicator& comm) {
    comm.barrier();
    // Ranks 0 and 2 wait for rank 1 in the allreduce; long enough that rank 0 aborts first however late it starts.
    if (comm.rank() == 1) std::this_thread::sleep_for(1500ms);
    std::thread aborter;
    if (comm.rank() == 0) {
      aborter = std::thread([&comm] {
        std::this_thread::sleep_for(100ms);
        const auto start = Clock::now();
        comm.abort();
        require(Clock::now() - start < 100ms, "abort() should not block");
      });
    }
    // Rank 0's allreduce fails with Aborted. A peer may still complete the call in flight when rank 0's part of it
    // had left before the abort; its next call fails with PeerLost saying rank 0 aborted. All within 2 s.
    const auto start = Clock::now();
    std::string outcome;
    for (int call = 0; call < 2 && outcome.empty(); ++call) {
      try {
        int x = 1;
        comm.allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
        if (comm.rank() == 0 || call == 1) outcome = "allreduce succeeded after the abort";
      } catch (const Error& e) {
        if (comm.rank() == 0 && e.code() != ErrorCode::kAborted) outcome = std::string("expected Aborted: ") + e.what();
        if (comm.rank() != 0 && (e.code() != ErrorCode::kPeerLost || !contains(e.what(), "aborted"))) {
          outcome = std::string("expected PeerLost saying rank 0 aborted: ") + e.what();
        }
        break;
      }
    }
    if (aborter.joinable()) aborter.join();
    require(outcome.empty(), outcome);
    require(Clock::now() - start < 2500ms, "the calls took longer than 2 s after the abort");
    if (comm.rank() == 0) {
      try {
        comm.barrier();
      } catch (const Error& e) {
        require(e.code() == ErrorCode::kAborted, std::string("later call: ") + e.what());
        return;
      }
      throw std::runtime_error("a call after abort() did not fail");
    }
  });
  EXPECT_EQ(failures(results), "");
}

TEST_P(Abort, BeforeAnyCallAndTwiceIsHarmless) {
  auto results = runProcessesWith(2, faultSettings(GetParam()), [](Communicator& comm) {
    comm.abort();
    comm.abort();
    try {
      comm.barrier();
    } catch (const Error& e) {
      require(e.code() == ErrorCode::kAborted || e.code() == ErrorCode::kPeerLost, e.what());
      return;
    }
    throw std::runtime_error("barrier after abort() did not fail");
  });
  EXPECT_EQ(failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Faults, Abort, ::testing::Values("shm", "tcp"));

// abort() during creation: one of two ranks never joins; another thread aborts the waiting one's creation.
TEST(AbortCreation, EndsAWaitingCreationWithAbortedWithinTwoSeconds) {
  const UniqueId id = Communicator::uniqueId();
  auto handle = std::make_shared<AbortHandle>();
  std::thread aborter([&] {
    std::this_thread::sleep_for(200ms);
    handle->abort();
  });
  const auto start = Clock::now();
  std::string outcome = "creation did not fail";
  try {
    Communicator::create(id, 0, 2, handle);  // rank 1 never comes
  } catch (const Error& e) {
    outcome = e.code() == ErrorCode::kAborted ? "" : std::string("expected Aborted: ") + e.what();
  }
  aborter.join();
  EXPECT_EQ(outcome, "");
  EXPECT_LT(Clock::now() - start, 2200ms);
  EXPECT_THROW(Communicator::create(id, 0, 2, handle), Error);  // an aborted handle refuses at once
}

// abort() through the handle after creation aborts the communicator; and while a destructor waits for a queued call
// stuck on an absent peer, abort() from another thread lets the destruction finish.
TEST(AbortCreation, TheHandleAbortsWhatItMadeEvenDuringDestruction) {
  const UniqueId id = Communicator::uniqueId();
  auto handle0 = std::make_shared<AbortHandle>();
  std::unique_ptr<Communicator> c0;
  std::unique_ptr<Communicator> c1;
  std::thread t1([&] { c1 = Communicator::create(id, 1, 2); });
  c0 = Communicator::create(id, 0, 2, handle0);
  t1.join();
  int x = 1;
  Work pending = c0->barrierAsync();  // rank 1 never joins: the call blocks rank 0's progress thread
  std::thread aborter([&] {
    std::this_thread::sleep_for(200ms);
    handle0->abort();
  });
  const auto start = Clock::now();
  c0.reset();  // waits for the queued barrier, which the abort ends
  aborter.join();
  EXPECT_LT(Clock::now() - start, 2200ms);
  try {
    // Its barrier may complete (rank 0 had arrived before it aborted); the call after cannot.
    c1->barrier();
    c1->allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
    ADD_FAILURE() << "the peer of an aborted rank should lose it";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
  }
  EXPECT_THROW(pending.wait(), Error);
}

// Calls that disagree fail with Mismatch on every rank, naming both sides; BRAID_DEBUG=detail makes that hold for
// every pattern (over shared memory every call's first round already compares every rank's call).
class Mismatch : public ::testing::TestWithParam<std::string> {};

// The two sides of a mismatch as every rank's error must name them: what each side passed, in the words the
// library describes a call with ("allreduce #0 (float32, count 100, sum)"), and the rank that called differently.
struct Sides {
  std::string common;  // what the other ranks passed, e.g. "count 100"
  std::string odd;     // what the odd rank passed, e.g. "count 50"
  int oddRank;
};

// A rank is named by its error when it is the error's own rank ("this rank called ..."), its peer, or said in the
// message: a rank that hears of the mismatch from another's notice reads "rank 0 failed allreduce #0 (...): this
// rank called ... but peer 2 called ...".
bool names(const Error& e, int r) { return e.context().rank == r || namesRank(e, r); }

void expectMismatchEverywhere(const std::string& transport, const Sides& sides,
                              const std::function<void(Communicator&)>& call) {
  Settings s = faultSettings(transport);
  s.debug = "detail";
  auto results = runProcessesWith(3, s, [&](Communicator& comm) {
    try {
      call(comm);
    } catch (const Error& e) {
      require(e.code() == ErrorCode::kMismatch, std::string("expected Mismatch: ") + e.what());
      require(contains(e.message(), sides.common) && contains(e.message(), sides.odd),
              "the error should name both calls' " + sides.common + " and " + sides.odd + ": " + e.what());
      // Both ranks of the disagreement: the odd one, and one of those that called otherwise. A rank is one of them
      // itself ("this rank called ..."), so each must name the other side.
      bool other = false;
      for (int r = 0; r < comm.size(); ++r) other = other || (r != sides.oddRank && names(e, r));
      require(names(e, sides.oddRank) && other, "the error should name rank " + std::to_string(sides.oddRank) +
                                                    " and a rank that called " + sides.common + ": " + e.what());
      int x = 1;
      comm.allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);  // the communicator goes on
      require(x == 3, "allreduce after a mismatch");
      return;
    }
    throw std::runtime_error("the mismatched call did not fail");
  });
  EXPECT_EQ(failures(results), "");
}

TEST_P(Mismatch, Counts) {
  expectMismatchEverywhere(GetParam(), {"count 100", "count 50", 2}, [](Communicator& comm) {
    std::vector<float> buf(100, 1.0f);
    comm.allreduce(buf.data(), buf.data(), comm.rank() == 2 ? 50 : 100, DataType::kFloat32, ReduceKind::kSum);
  });
}

TEST_P(Mismatch, DataTypes) {
  // "(int32," and not "int32", which "uint32" contains.
  expectMismatchEverywhere(GetParam(), {"(int32,", "(uint32,", 1}, [](Communicator& comm) {
    std::vector<std::int32_t> buf(16, 1);
    comm.allreduce(buf.data(), buf.data(), buf.size(), comm.rank() == 1 ? DataType::kUint32 : DataType::kInt32,
                   ReduceKind::kSum);
  });
}

TEST_P(Mismatch, Roots) {
  expectMismatchEverywhere(GetParam(), {"root 0", "root 1", 2}, [](Communicator& comm) {
    std::vector<std::int32_t> buf(16, comm.rank());
    comm.broadcast(buf.data(), buf.size(), DataType::kInt32, comm.rank() == 2 ? 1 : 0);
  });
}

TEST_P(Mismatch, Collectives) {
  expectMismatchEverywhere(GetParam(), {"allreduce #", "allgather #", 0}, [](Communicator& comm) {
    std::vector<std::int32_t> buf(16 * 3, 1);
    if (comm.rank() == 0) {
      comm.allgather(buf.data(), buf.data(), 16, DataType::kInt32);
    } else {
      comm.allreduce(buf.data(), buf.data(), 16, DataType::kInt32, ReduceKind::kSum);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Faults, Mismatch, ::testing::Values("shm", "tcp"));

// Without BRAID_DEBUG=detail a mismatch over TCP is caught by the frames themselves: never a hang, never a wrong
// answer; the ranks whose messages show it fail with Mismatch.
TEST(MismatchWithoutDetail, RootsNeverHangOverTcp) {
  const auto start = Clock::now();
  // Each rank's buffer starts as its own data, distinct from every other rank's, so whose data a rank holds after the
  // call shows.
  auto data = [](int rank, std::size_t j) { return static_cast<std::int32_t>((rank + 1) * 1000 + j); };
  auto results = runProcessesWith(3, faultSettings("tcp"), [&](Communicator& comm) {
    std::vector<std::int32_t> buf(16);
    for (std::size_t j = 0; j < buf.size(); ++j) buf[j] = data(comm.rank(), j);
    try {
      comm.broadcast(buf.data(), buf.size(), DataType::kInt32, comm.rank() == 2 ? 1 : 0);
    } catch (const Error& e) {
      require(e.code() == ErrorCode::kMismatch, e.what());
      return;
    }
    // A broadcast that completed is a promise: this rank holds what root 0 sent (the majority's root).
    for (std::size_t j = 0; j < buf.size(); ++j) {
      require(buf[j] == data(0, j), "rank " + std::to_string(comm.rank()) + "'s broadcast completed but element " +
                                        std::to_string(j) + " is " + std::to_string(buf[j]) + ", root 0 sent " +
                                        std::to_string(data(0, j)));
    }
  });
  EXPECT_EQ(failures(results), "");
  EXPECT_LT(Clock::now() - start, 10s);
}

}  // namespace
}  // namespace braid::testing
