// What callers see when things go wrong: mismatched calls, rejected arguments, timeouts, dead peers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "support/collective_cases.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

using namespace std::chrono_literals;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Thread ranks over the in-memory transport and over TCP: what a caller sees must not depend on the transport.
class ErrorsOver : public ::testing::TestWithParam<std::string> {
 protected:
  Settings settings() const { return GetParam() == "tcp" ? tcpSettings() : testSettings(); }
};

INSTANTIATE_TEST_SUITE_P(Transports, ErrorsOver, ::testing::Values("memory", "tcp"));

TEST_P(ErrorsOver, MismatchedCountsFailOnEveryRankNamingBothSides) {
  auto results = runThreads(
      3,
      [](Communicator& comm) {
        std::vector<float> buf(100, 1.0f);
        const std::size_t count = comm.rank() == 2 ? 50 : 100;
        try {
          comm.allreduce(buf.data(), buf.data(), count, DataType::kFloat32, ReduceKind::kSum);
        } catch (const Error& e) {
          require(e.code() == ErrorCode::kMismatch, std::string("expected Mismatch, got ") + e.what());
          require(contains(e.what(), "count 50") && contains(e.what(), "count 100"), e.what());
          require(e.context().peer != comm.rank(), "a rank named itself its peer: " + std::string(e.what()));
          // The communicator stays usable after a mismatch.
          int x = 1;
          comm.allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
          require(x == 3, "allreduce after a mismatch");
          return;
        }
        throw std::runtime_error("mismatched allreduce did not fail");
      },
      settings());
  EXPECT_EQ(failures(results), "");
}

TEST_P(ErrorsOver, DifferentCollectivesAreNamed) {
  auto results = runThreads(
      2,
      [](Communicator& comm) {
        int x = 1;
        try {
          if (comm.rank() == 0) {
            comm.allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
          } else {
            comm.broadcast(&x, 1, DataType::kInt32, 0);
          }
        } catch (const Error& e) {
          require(
              e.code() == ErrorCode::kMismatch && contains(e.what(), "allreduce") && contains(e.what(), "broadcast"),
              e.what());
          return;
        }
        throw std::runtime_error("allreduce vs broadcast did not fail");
      },
      settings());
  EXPECT_EQ(failures(results), "");
}

// Registration (Communicator::registerBuffer) takes GPU memory only: host memory is refused on the rank that passed
// it, by name, and its peers fail the same call; the communicator goes on, and deregistering nothing is nothing.
TEST_P(ErrorsOver, RegisteringHostMemoryIsRefusedOnEveryRank) {
  auto results = runThreads(
      2,
      [](Communicator& comm) {
        std::vector<float> buf(1024, 1.0f);
        try {
          (void)comm.registerBuffer(buf.data(), buf.size() * 4);
          throw std::runtime_error("host memory was registered");
        } catch (const Error& e) {
          require(e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kMismatch, e.what());
          require(contains(e.what(), "register_buffer"), std::string("the error does not name the call: ") + e.what());
          if (e.code() == ErrorCode::kInvalidArgument) {
            require(contains(e.what(), "only GPU memory can be registered; the buffer is host memory"), e.what());
          }
        }
        comm.deregisterBuffer(BufferRegistration{});
        int x = 1;
        comm.allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
        require(x == 2, "allreduce after a refused registration");
      },
      settings());
  EXPECT_EQ(failures(results), "");
}

TEST(Errors, RejectedArgumentsOnOneRankFailEveryRankFast) {
  const auto start = std::chrono::steady_clock::now();
  auto results = runThreads(3, [](Communicator& comm) {
    int x = 1;
    const int root = comm.rank() == 1 ? 7 : 0;  // rank 1 passes a root out of range
    try {
      comm.broadcast(&x, 1, DataType::kInt32, root);
    } catch (const Error& e) {
      if (comm.rank() == 1) {
        require(e.code() == ErrorCode::kInvalidArgument && contains(e.what(), "root 7"), e.what());
      } else {
        require(e.code() == ErrorCode::kMismatch && contains(e.what(), "rejected"), e.what());
      }
      return;
    }
    throw std::runtime_error("bad root did not fail");
  });
  EXPECT_EQ(failures(results), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(Errors, BadArgumentsAreNamed) {
  auto results = runThreads(2, [](Communicator& comm) {
    auto expectInvalid = [&](const std::function<void()>& call, const std::string& part) {
      try {
        call();
      } catch (const Error& e) {
        require(e.code() == ErrorCode::kInvalidArgument, std::string("expected InvalidArgument: ") + e.what());
        require(contains(e.what(), part), std::string("message lacks '") + part + "': " + e.what());
        return;
      }
      throw std::runtime_error("no error for " + part);
    };
    float f = 0;
    expectInvalid([&] { comm.allreduce(nullptr, &f, 4, DataType::kFloat32, ReduceKind::kSum); }, "send buffer is null");
    expectInvalid([&] { comm.allreduce(&f, &f, 1, DataType::kFloat32, ReduceKind::kBxor); }, "bxor");
    // A reduce op the type does not take is named with the call's whole context, as every other argument is.
    expectInvalid([&] { comm.allreduce(&f, &f, 1, DataType::kFloat32, ReduceKind::kBxor); },
                  "[rank " + std::to_string(comm.rank()) + ", allreduce #");
    expectInvalid([&] { comm.allreduce(&f, &f, 1, static_cast<DataType>(42), ReduceKind::kSum); }, "data type");
    expectInvalid([&] { comm.send(&f, 1, DataType::kFloat32, 5); }, "peer 5");
    expectInvalid([&] { comm.allreduce(&f, &f, SIZE_MAX / 2, DataType::kFloat32, ReduceKind::kSum); },
                  "larger than any buffer");
    // A negative count passed as size_t: on 1-byte types count * size does not overflow, but no buffer is that big.
    std::int8_t b = 0;
    const auto negative = static_cast<std::size_t>(-1);
    expectInvalid([&] { comm.allreduce(&b, &b, negative, DataType::kInt8, ReduceKind::kSum); }, "larger than any");
    expectInvalid([&] { comm.broadcast(&b, negative, DataType::kUint8, 0); }, "larger than any buffer");
    expectInvalid([&] { comm.send(&b, negative, DataType::kBool, 1 - comm.rank()); }, "larger than any buffer");
    // The root's buffer of a gather is too large on every rank, not only on the root that holds it.
    expectInvalid([&] { comm.gather(&b, &b, std::size_t{1} << 62, DataType::kInt8, 0); }, "root's recv buffer");
    expectInvalid([&] { comm.scatter(&b, &b, std::size_t{1} << 62, DataType::kInt8, 1); }, "root's send buffer");
    expectInvalid(
        [&] {
          comm.group({P2pOp{static_cast<P2pOp::Kind>(7), 1 - comm.rank(), &f, 1, DataType::kFloat32}});
        },
        "neither send nor recv");
    std::vector<std::size_t> counts{1};
    expectInvalid([&] { comm.allgatherv(&f, 1, &f, counts, counts, DataType::kFloat32); }, "one per rank");
    // Receive blocks that overlap: each element would be written twice, differently by each transport.
    std::vector<float> all(4);
    const std::vector<std::size_t> two{2, 2}, atZero{0, 1};
    expectInvalid([&] { comm.allgatherv(all.data() + 2, 2, all.data(), two, atZero, DataType::kFloat32); },
                  "blocks of ranks 0 and 1 overlap");
    expectInvalid(
        [&] {
          comm.alltoallv(all.data(), two, std::vector<std::size_t>{0, 2}, all.data() + 4, two, atZero,
                         DataType::kFloat32);
        },
        "recvDispls: the blocks of ranks 0 and 1 overlap");
  });
  EXPECT_EQ(failures(results), "");
}

// Send and receive ranges that overlap other than in the call's in-place form would read what the call already wrote
// (on some algorithms and sizes only): every such call is refused on the rank that makes it, naming the form, and the
// in-place forms themselves still run.
TEST(Errors, OverlappingBuffersAreRefusedUnlessInPlace) {
  auto results = runThreads(3, [](Communicator& comm) {
    const auto n = static_cast<std::size_t>(comm.size());
    const auto me = static_cast<std::size_t>(comm.rank());
    constexpr std::size_t kCount = 8;
    std::vector<float> buf(4 * n * kCount, 1.0f);
    float* base = buf.data();
    auto expectOverlap = [&](const char* what, const std::function<void()>& call, const std::string& form) {
      try {
        call();
      } catch (const Error& e) {
        require(e.code() == ErrorCode::kInvalidArgument, std::string(what) + ": expected InvalidArgument: " + e.what());
        require(contains(e.what(), "overlaps") && contains(e.what(), form), std::string(what) + ": " + e.what());
        return;
      }
      throw std::runtime_error(std::string(what) + ": an overlapping call was not refused");
    };
    const auto f32 = DataType::kFloat32;
    expectOverlap(
        "allreduce", [&] { comm.allreduce(base, base + 1, kCount, f32, ReduceKind::kSum); }, "send == recv");
    expectOverlap(
        "reduce", [&] { comm.reduce(base, base + 1, kCount, f32, ReduceKind::kSum, comm.rank()); }, "send == recv");
    expectOverlap(
        "allgather", [&] { comm.allgather(base + me * kCount + 1, base, kCount, f32); }, "send == recv + rank * count");
    expectOverlap(
        "reduce_scatter", [&] { comm.reduceScatter(base, base + me * kCount + 1, kCount, f32, ReduceKind::kSum); },
        "recv == send + rank * recvCount");
    expectOverlap(
        "alltoall", [&] { comm.alltoall(base, base + 2, kCount, f32); }, "send == recv");
    expectOverlap(
        "gather", [&] { comm.gather(base + 1, base, kCount, f32, comm.rank()); }, "send == recv + root * count");
    expectOverlap(
        "scatter", [&] { comm.scatter(base, base + n * kCount - 1, kCount, f32, comm.rank()); },
        "recv == send + root * count");
    const std::vector<std::size_t> counts(n, kCount), displs = [&] {
      std::vector<std::size_t> d(n);
      for (std::size_t r = 0; r < n; ++r) d[r] = r * kCount;
      return d;
    }();
    expectOverlap(
        "allgatherv", [&] { comm.allgatherv(base + 3, kCount, base, counts, displs, f32); },
        "send == recv + displs[rank]");

    // The in-place forms run, and the communicator is whole after the refusals.
    std::vector<float> all(n * kCount);
    for (std::size_t i = 0; i < kCount; ++i) all[me * kCount + i] = static_cast<float>(me + 1);
    comm.allgather(all.data() + me * kCount, all.data(), kCount, f32);
    for (std::size_t r = 0; r < n; ++r) require(all[r * kCount] == static_cast<float>(r + 1), "in-place allgather");
    std::vector<float> blocks(n * kCount, 1.0f);
    comm.reduceScatter(blocks.data(), blocks.data() + me * kCount, kCount, f32, ReduceKind::kSum);
    require(blocks[me * kCount] == static_cast<float>(n), "in-place reduce_scatter");
  });
  EXPECT_EQ(failures(results), "");
}

TEST(Errors, AbsentPeerTimesOutNamingIt) {
  Settings s = testSettings();
  s.timeoutSeconds = 0.5;
  auto results = runThreads(
      2,
      [](Communicator& comm) {
        if (comm.rank() == 1) {  // never joins the barrier, nor leaves before rank 0 is done (that would tell it)
          std::this_thread::sleep_for(2s);
          return;
        }
        try {
          comm.barrier();
        } catch (const Error& e) {
          require(e.code() == ErrorCode::kTimeout && e.context().peer == 1, e.what());
          // The ranks are out of step now: later calls fail at once, their text naming the peer the timeout named
          // (their fields do not: a peer that is late may be alive).
          try {
            comm.barrier();
          } catch (const Error& later) {
            require(contains(later.what(), "unusable") && contains(later.what(), "peer 1") && later.context().peer < 0,
                    later.what());
            return;
          }
          throw std::runtime_error("call after a timeout did not fail");
        }
        throw std::runtime_error("barrier without peer did not time out");
      },
      s);
  EXPECT_EQ(failures(results), "");
}

// A rank that times out waiting for a late peer breaks its communicator. The late peer, arriving after that, must not
// finish the call its peer failed (it found the peer's data already posted), nor wait out a timeout of its own: it
// fails at once with PeerLost naming that peer, its output untouched. Small calls (one round) and large (many).
TEST_P(ErrorsOver, ALatePeerFailsTheCallItsPeerFailed) {
  for (const std::size_t count : {std::size_t{16}, std::size_t{1} << 20}) {
    auto results = runThreads(
        2,
        [count](Communicator& comm) {
          std::vector<float> in(count, 1.0f), out(count, -7.0f);
          if (comm.rank() == 0) std::this_thread::sleep_for(1500ms);
          const auto start = std::chrono::steady_clock::now();
          try {
            comm.allreduce(in.data(), out.data(), count, DataType::kFloat32, ReduceKind::kSum, CallOptions{300ms});
          } catch (const Error& e) {
            if (comm.rank() == 1) {
              require(e.code() == ErrorCode::kTimeout, e.what());
            } else {
              require(e.code() == ErrorCode::kPeerLost && e.context().peer == 1, e.what());
              require(std::chrono::steady_clock::now() - start < 250ms, std::string("slow to fail: ") + e.what());
              require(out[0] == -7.0f && out[count - 1] == -7.0f, "the late rank's output was written");
            }
            return;
          }
          throw std::runtime_error("rank " + std::to_string(comm.rank()) + " finished an allreduce of " +
                                   std::to_string(count) + " its peer failed");
        },
        settings());
    EXPECT_EQ(failures(results), "") << count << " elements";
  }
}

// A mismatch every rank failed alike blames nobody afterwards: a peer that aborts later is the peer named, not the
// rank the mismatch's notice pointed at.
TEST_P(ErrorsOver, APeerThatAbortsAfterAMismatchIsTheOneNamed) {
  auto results = runThreads(
      2,
      [](Communicator& comm) {
        std::vector<float> v(2, 1.0f);
        try {
          comm.allreduce(v.data(), v.data(), 1 + static_cast<std::size_t>(comm.rank()), DataType::kFloat32,
                         ReduceKind::kSum);
          throw std::runtime_error("allreduces of 1 and 2 elements went through");
        } catch (const Error& e) {
          require(e.code() == ErrorCode::kMismatch, e.what());
        }
        if (comm.rank() == 1) {
          std::this_thread::sleep_for(100ms);  // rank 0 waits in its barrier by then
          comm.abort();
          return;
        }
        try {
          comm.barrier();
        } catch (const Error& e) {
          require(e.code() == ErrorCode::kPeerLost && e.context().peer == 1, e.what());
          return;
        }
        throw std::runtime_error("a barrier with a peer that aborted went through");
      },
      settings());
  EXPECT_EQ(failures(results), "");
}

// A rank that destroys its communicator while it lives on: a peer waiting for it learns so at once, over shared memory
// as over TCP, instead of at its heartbeat timeout (30 s) blaming a frozen process.
TEST(Errors, APeerProcessThatDestroysItsCommunicatorIsPeerLostAtOnce) {
  for (const char* transport : {"shm", "tcp"}) {
    auto results = runProcesses(
        3,
        [](Communicator& comm) {
          std::unique_ptr<Communicator> child = comm.split(0, comm.rank());
          child->barrier();
          if (comm.rank() == 2) {
            child.reset();
            std::this_thread::sleep_for(3s);  // alive: its exit would tell the peers by other means
            return;
          }
          const auto start = std::chrono::steady_clock::now();
          try {
            int x = 1;
            child->allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
          } catch (const Error& e) {
            require(e.code() == ErrorCode::kPeerLost && contains(e.what(), "destroyed its communicator"), e.what());
            require(std::chrono::steady_clock::now() - start < 2s, std::string("slow to fail: ") + e.what());
            return;
          }
          throw std::runtime_error("an allreduce with a peer that destroyed its communicator went through");
        },
        60, transport);
    EXPECT_EQ(failures(results), "") << transport;
  }
}

// Per-rank counts that disagree between a sender and its receiver: every rank fails, none naming itself its peer.
TEST_P(ErrorsOver, AlltoallvCountsThatDisagreeNameAnotherRank) {
  auto results = runThreads(
      2,
      [](Communicator& comm) {
        std::vector<float> in(8, 1.0f), out(8, 0.0f);
        // Rank 0 sends 4 elements to rank 1, which expects 2 from it.
        const std::vector<std::size_t> send{4, 4},
            recv = comm.rank() == 1 ? std::vector<std::size_t>{2, 4} : std::vector<std::size_t>{4, 4};
        const std::vector<std::size_t> displs{0, 4};
        try {
          comm.alltoallv(in.data(), send, displs, out.data(), recv, displs, DataType::kFloat32);
        } catch (const Error& e) {
          require(e.code() == ErrorCode::kMismatch && e.context().peer != comm.rank(), e.what());
          return;
        }
        if (comm.rank() == 0) return;  // the sender may finish: what it sent was whole
        throw std::runtime_error("rank 1 received 4 elements where it expected 2");
      },
      settings());
  EXPECT_EQ(failures(results), "");
}

TEST(Errors, PerCallTimeoutOverridesTheDefault) {
  auto results = runThreads(2, [](Communicator& comm) {
    if (comm.rank() == 1) {  // absent, but alive
      std::this_thread::sleep_for(1s);
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      comm.barrier(CallOptions{200ms});
    } catch (const Error& e) {
      require(e.code() == ErrorCode::kTimeout, e.what());
      require(std::chrono::steady_clock::now() - start < 5s, "per-call timeout ignored");
      return;
    }
    throw std::runtime_error("no timeout");
  });
  EXPECT_EQ(failures(results), "");
}

TEST(Errors, DeadPeerProcessIsPeerLostWithinSeconds) {
  auto results = runProcesses(3, [](Communicator& comm) {
    comm.barrier();
    if (comm.rank() == 2) ::_exit(0);  // dies without a word
    const auto start = std::chrono::steady_clock::now();
    try {
      int x = 1;
      comm.allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
    } catch (const Error& e) {
      require(e.code() == ErrorCode::kPeerLost && e.context().peer == 2, e.what());
      require(std::chrono::steady_clock::now() - start < 5s, "PeerLost took too long");
      // Later calls fail at once, naming the lost peer in their fields too (what a shrink would leave out).
      try {
        comm.barrier();
      } catch (const Error& later) {
        require(later.code() == ErrorCode::kPeerLost && later.context().peer == 2, later.what());
        return;
      }
      throw std::runtime_error("a call after PeerLost went through");
    }
    throw std::runtime_error("allreduce with a dead peer did not fail");
  });
  EXPECT_EQ(failures(results), "");
}

TEST_P(ErrorsOver, ReceiveOfTheWrongSizeIsMismatch) {
  auto results = runThreads(
      2,
      [](Communicator& comm) {
        std::vector<int> buf(16, 3);
        if (comm.rank() == 0) {
          comm.send(buf.data(), 16, DataType::kInt32, 1, 9);
          return;
        }
        try {
          comm.recv(buf.data(), 8, DataType::kInt32, 0, 9);
        } catch (const Error& e) {
          require(e.code() == ErrorCode::kMismatch && contains(e.what(), "64 bytes") && contains(e.what(), "32 bytes"),
                  e.what());
          return;
        }
        throw std::runtime_error("short receive did not fail");
      },
      settings());
  EXPECT_EQ(failures(results), "");
}

}  // namespace
}  // namespace braid::testing
