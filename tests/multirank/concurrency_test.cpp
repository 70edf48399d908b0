// The thread-safety contract of braid.hpp: independent communicators run concurrently; calls on one
// communicator from several threads are serialised; async calls run in issue order.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "support/collective_cases.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

TEST(Concurrency, IndependentCommunicatorsRunAtTheSameTime) {
  // Two groups of 3 thread-ranks run allreduces concurrently in the same process.
  std::vector<std::string> a, b;
  auto body = [](Communicator& comm) {
    for (int i = 0; i < 200; ++i) {
      long v = comm.rank() + i;
      comm.allreduce(&v, &v, 1, DataType::kInt64, ReduceKind::kSum);
      require(v == 3 + 3 * i, "sum");
    }
  };
  std::thread ta([&] { a = runThreads(3, body); });
  std::thread tb([&] { b = runThreads(3, body); });
  ta.join();
  tb.join();
  EXPECT_EQ(failures(a), "");
  EXPECT_EQ(failures(b), "");
}

// ---- Calls from several threads of each rank, each carrying data that names the call in every element.
//
// Every rank runs kThreads threads on its one communicator, each issuing kCalls calls: the even threads blocking
// calls, the odd ones async calls queued kBatch at a time. Ranks pair their calls by issue order (the library
// serialises them), so which thread's call meets which on another rank is not known in advance; every element
// says which (thread, call) of which rank it came from, so a call whose messages mixed with another call's shows
// elements of two calls (or one rank's twice). Whom each call met is logged, and the log must show every call of
// every peer met exactly once, and each pair of threads meeting in their issue order.

constexpr int kThreads = 4;
constexpr int kCalls = 32;  // per thread
constexpr int kBatch = 5;   // async calls a thread queues before it waits for them

struct CallId {
  int thread = -1;
  int call = -1;
  bool operator==(const CallId&) const = default;
};

std::string nameOf(CallId id) { return strCat("thread ", id.thread, " call ", id.call); }

enum class Exchange { kAllreduce, kAllgather };

// Rank r's element j of call `id`.
// Allreduce (2 ranks): a 32-bit (thread, call, j) field in rank r's half of the word, so the sum of the two ranks'
// contributions keeps both whole, and a contribution added twice or taken from another call changes the fields.
// Allgather: (rank, thread, call, j) in one word.
std::uint64_t elementOf(Exchange x, int r, CallId id, std::size_t j) {
  const auto t = static_cast<std::uint64_t>(id.thread), c = static_cast<std::uint64_t>(id.call);
  if (x == Exchange::kAllreduce) return ((t << 28) | (c << 16) | (j & 0xffff)) << (32 * r);
  return (static_cast<std::uint64_t>(r) << 56) | (t << 48) | (c << 32) | j;
}

// The call each rank contributed to `out`, read from its first element and then required of every element.
std::vector<CallId> callsIn(Exchange x, int ranks, std::size_t count, const std::vector<std::uint64_t>& out) {
  std::vector<CallId> ids(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    if (x == Exchange::kAllreduce) {
      const std::uint64_t field = (out[0] >> (32 * r)) & 0xffffffffu;
      ids[r] = CallId{static_cast<int>(field >> 28), static_cast<int>((field >> 16) & 0xfff)};
    } else {
      const std::uint64_t v = out[r * count];
      ids[r] = CallId{static_cast<int>((v >> 48) & 0xff), static_cast<int>((v >> 32) & 0xffff)};
    }
    require(ids[r].thread < kThreads && ids[r].call < kCalls, strCat("rank ", r, "'s part names no call: ", out[0]));
  }
  for (std::size_t j = 0; j < count; ++j) {
    if (x == Exchange::kAllreduce) {
      std::uint64_t want = 0;
      for (int r = 0; r < ranks; ++r) want += elementOf(x, r, ids[r], j);
      require(out[j] == want, strCat("element ", j, " is ", out[j], ", not ", want, " (", nameOf(ids[0]),
                                     " of rank 0 with ", nameOf(ids[1]), " of rank 1): data of two calls mixed"));
      continue;
    }
    for (int r = 0; r < ranks; ++r) {
      const std::uint64_t got = out[r * count + j], want = elementOf(x, r, ids[r], j);
      require(got == want, strCat("rank ", r, "'s element ", j, " is ", got, ", not ", want, " (", nameOf(ids[r]),
                                  "): data of two calls mixed"));
    }
  }
  return ids;
}

// Runs the calls of every thread of this rank and checks whom they met.
void callFromThreads(Communicator& comm, Exchange x, std::size_t count) {
  const int ranks = comm.size(), me = comm.rank();
  if (x == Exchange::kAllreduce) require(ranks == 2, "the allreduce encoding holds two ranks");
  const std::size_t outCount = x == Exchange::kAllreduce ? count : count * ranks;
  std::mutex mu;
  std::vector<std::pair<CallId, std::vector<CallId>>> met;  // (this rank's call, each rank's call it met)
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        const bool async = t % 2 == 1;
        for (int first = 0; first < kCalls; first += async ? kBatch : 1) {
          const int n = async ? std::min(kBatch, kCalls - first) : 1;
          std::vector<std::vector<std::uint64_t>> ins(n, std::vector<std::uint64_t>(count)),
              outs(n, std::vector<std::uint64_t>(outCount));
          std::vector<Work> works;
          for (int k = 0; k < n; ++k) {
            const CallId id{t, first + k};
            for (std::size_t j = 0; j < count; ++j) ins[k][j] = elementOf(x, me, id, j);
            const void* in = ins[k].data();
            void* out = outs[k].data();
            if (x == Exchange::kAllreduce) {
              if (async) {
                works.push_back(comm.allreduceAsync(in, out, count, DataType::kUint64, ReduceKind::kSum));
              } else {
                comm.allreduce(in, out, count, DataType::kUint64, ReduceKind::kSum);
              }
            } else if (async) {
              works.push_back(comm.allgatherAsync(in, out, count, DataType::kUint64));
            } else {
              comm.allgather(in, out, count, DataType::kUint64);
            }
          }
          for (auto& w : works) w.wait();
          for (int k = 0; k < n; ++k) {
            const CallId id{t, first + k};
            try {
              std::vector<CallId> ids = callsIn(x, ranks, count, outs[k]);
              require(ids[me] == id, strCat(nameOf(id), " got ", nameOf(ids[me]), " as its own part"));
              std::lock_guard lock(mu);
              met.emplace_back(id, std::move(ids));
            } catch (const std::exception& e) {
              // Wrong data, but the calls went through: the thread goes on, so that its peers are not left
              // waiting for calls it would never make.
              if (errors[t].empty()) errors[t] = strCat(nameOf(id), ": ", e.what());
            }
          }
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();  // a call failed: the peers fail too
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) require(errors[t].empty(), strCat("thread ", t, ": ", errors[t]));
  require(met.size() == std::size_t{kThreads * kCalls}, strCat(met.size(), " calls completed"));
  require(comm.sequenceNumber() == kThreads * kCalls, strCat("sequence number ", comm.sequenceNumber()));
  for (int r = 0; r < ranks; ++r) {
    // Every call of rank r was met by exactly one call of this rank.
    std::vector<int> times(kThreads * kCalls, 0);
    for (const auto& [mine, ids] : met) ++times[ids[r].thread * kCalls + ids[r].call];
    for (int i = 0; i < kThreads * kCalls; ++i) {
      require(times[i] == 1,
              strCat("rank ", r, "'s ", nameOf({i / kCalls, i % kCalls}), " was met ", times[i], " times"));
    }
  }
  // A thread's calls run in its issue order: those of one thread here met those of one thread there in order.
  std::sort(met.begin(), met.end(), [](const auto& a, const auto& b) { return a.first.call < b.first.call; });
  for (int r = 0; r < ranks; ++r) {
    for (int t = 0; t < kThreads; ++t) {
      for (int peerThread = 0; peerThread < kThreads; ++peerThread) {
        int last = -1;
        for (const auto& [mine, ids] : met) {
          if (mine.thread != t || ids[r].thread != peerThread) continue;
          require(ids[r].call > last, strCat(nameOf(mine), " met rank ", r, "'s ", nameOf(ids[r]), " after its call ",
                                             last, ": calls out of issue order"));
          last = ids[r].call;
        }
      }
    }
  }
}

// Page-sized shared-memory slots: a call of kLargeCount elements takes several rounds, so that calls that
// interleaved would do so in the middle of each other's messages.
constexpr std::size_t kLargeCount = 2048;
Settings smallSlots(const std::string& transport = "") {
  Settings s = testSettings();
  s.shmSlotBytes = 4096;
  if (!transport.empty()) s.transport = transport;
  return s;
}

TEST(Concurrency, AllreducesFromSeveralThreadsOfOneRankDoNotMix) {
  for (std::size_t count : {std::size_t{3}, kLargeCount}) {
    SCOPED_TRACE(strCat(count, " elements"));
    EXPECT_EQ(
        failures(runThreads(
            2, [count](Communicator& comm) { callFromThreads(comm, Exchange::kAllreduce, count); }, smallSlots())),
        "");
  }
}

TEST(Concurrency, AllgathersFromSeveralThreadsOfOneRankDoNotMix) {
  for (std::size_t count : {std::size_t{3}, kLargeCount}) {
    SCOPED_TRACE(strCat(count, " elements"));
    EXPECT_EQ(
        failures(runThreads(
            3, [count](Communicator& comm) { callFromThreads(comm, Exchange::kAllgather, count); }, smallSlots())),
        "");
  }
}

TEST(Concurrency, CallsFromSeveralThreadsOfProcessRanksDoNotMix) {
  for (const char* transport : {"shm", "tcp"}) {
    SCOPED_TRACE(transport);
    EXPECT_EQ(failures(runProcessesWith(
                  2, smallSlots(transport),
                  [](Communicator& comm) { callFromThreads(comm, Exchange::kAllreduce, kLargeCount); })),
              "");
    EXPECT_EQ(failures(runProcessesWith(
                  3, smallSlots(transport),
                  [](Communicator& comm) { callFromThreads(comm, Exchange::kAllgather, kLargeCount); })),
              "");
  }
}

TEST(Concurrency, AsyncCallsCompleteInIssueOrderBeforeLaterBlockingCalls) {
  auto results = runThreads(3, [](Communicator& comm) {
    std::vector<std::vector<int>> bufs(8, std::vector<int>(1000));
    std::vector<Work> works;
    for (int k = 0; k < 8; ++k) {
      std::fill(bufs[k].begin(), bufs[k].end(), comm.rank() * (k + 1));
      works.push_back(comm.allreduceAsync(bufs[k].data(), bufs[k].data(), 1000, DataType::kInt32, ReduceKind::kSum));
    }
    int x = 1;
    comm.allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);  // runs after every queued call
    for (int k = 0; k < 8; ++k) require(works[k].test(), "queued call not finished before a later blocking one");
    for (int k = 0; k < 8; ++k) {
      works[k].wait();
      require(bufs[k][999] == 3 * (k + 1), "async result");
    }
    require(x == 3, "blocking result");
    require(comm.sequenceNumber() == 9, "sequence number");
  });
  EXPECT_EQ(failures(results), "");
}

TEST(Concurrency, WaitWithTimeoutReturnsFalseWhileTheCallRuns) {
  auto results = runThreads(2, [](Communicator& comm) {
    if (comm.rank() == 0) {
      Work w = comm.barrierAsync();
      require(!w.wait(std::chrono::milliseconds(50)), "barrier completed without its peer");
      comm.barrier();  // tells rank 1 to join
      w.wait();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      comm.barrier();
      comm.barrier();
    }
  });
  EXPECT_EQ(failures(results), "");
}

TEST(Concurrency, CompletionCallbacksRunOnceWithTheOutcomeAndMayQueueMoreCalls) {
  auto results = runThreads(2, [](Communicator& comm) {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> seen;
    auto note = [&](std::string what) {
      std::lock_guard lock(mu);
      seen.push_back(std::move(what));
      cv.notify_all();
    };
    int v = comm.rank() + 1;
    Work w = comm.allreduceAsync(&v, &v, 1, DataType::kInt32, ReduceKind::kSum);
    int second = 10;
    Work queued;
    w.onCompletion([&](std::exception_ptr e) {
      // Runs after the result is in place; queuing another call from here is allowed.
      note(e ? "error" : "ok " + std::to_string(v));
      queued = comm.allreduceAsync(&second, &second, 1, DataType::kInt32, ReduceKind::kSum);
      note("queued");
    });
    {
      std::unique_lock lock(mu);
      require(cv.wait_for(lock, std::chrono::seconds(30), [&] { return seen.size() == 2; }), "callback never ran");
    }
    queued.wait();
    require(second == 20, "call queued from a callback");
    require(seen[0] == "ok 3", "callback saw " + seen[0]);
    // Registered after completion: runs at once, on this thread.
    bool now = false;
    w.onCompletion([&](std::exception_ptr e) { now = e == nullptr; });
    require(now, "callback on a finished call did not run at once");
    // A failed call hands its error to the callback; a throwing callback is contained.
    float f = 1;  // a bitwise op on floats: refused on every rank
    Work bad = comm.allreduceAsync(&f, &f, 1, DataType::kFloat32, ReduceKind::kBand);
    std::exception_ptr got;
    bad.onCompletion([](std::exception_ptr) { throw std::runtime_error("callback threw"); });
    bad.onCompletion([&](std::exception_ptr e) {
      {
        std::lock_guard lock(mu);  // before note(): the waiter reads `got` as soon as it sees the note
        got = e;
      }
      note("bad");
    });
    {
      std::unique_lock lock(mu);
      require(cv.wait_for(lock, std::chrono::seconds(30), [&] { return seen.size() == 3; }), "error callback");
    }
    require(got != nullptr, "a failed call reported success to its callback");
  });
  EXPECT_EQ(failures(results), "");
}

// A callback runs on the progress thread, in the call it completes: a blocking call there would queue behind that
// call and wait for itself. It is refused by name, not a hang, and the communicator goes on.
TEST(Concurrency, ABlockingCallFromACompletionCallbackIsRefusedNotAHang) {
  auto results = runThreads(2, [](Communicator& comm) {
    int value = comm.rank();
    if (comm.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // rank 0's call completes after its callback is set
      comm.broadcastAsync(&value, 1, DataType::kInt32, 1).wait();
    } else {
      std::mutex mu;
      std::condition_variable cv;
      std::string what;
      bool done = false;
      Work w = comm.broadcastAsync(&value, 1, DataType::kInt32, 1);
      w.onCompletion([&](std::exception_ptr) {
        std::string got = "no error";
        try {
          comm.barrier();
        } catch (const Error& e) {
          got = e.what();
        }
        {
          std::lock_guard lock(mu);
          what = got;
          done = true;
        }
        cv.notify_all();
      });
      std::unique_lock lock(mu);
      require(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done; }), "the callback's blocking call hung");
      require(what.find("InvalidArgument") != std::string::npos && what.find("onCompletion") != std::string::npos,
              "expected InvalidArgument naming the callback: " + what);
      w.wait();
      require(value == 1, "the broadcast gave " + std::to_string(value));
    }
    comm.barrier();  // the communicator goes on
  });
  EXPECT_EQ(failures(results), "");
}

}  // namespace
}  // namespace braid::testing
