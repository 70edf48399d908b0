// The thread-safety contract of braid.hpp: independent communicators run concurrently; calls on one
// communicator from several threads are serialised; async calls run in issue order.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

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

TEST(Concurrency, CallsFromSeveralThreadsOfOneRankAreSerialised) {
  // Each rank issues barriers from 4 threads at once; they must not corrupt each other (every barrier
  // completes, none interleaves with another's rounds). Barriers are interchangeable across ranks, so the
  // order across ranks does not matter here.
  auto results = runThreads(2, [](Communicator& comm) {
    std::vector<std::thread> threads;
    std::atomic<int> done{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 50; ++i) comm.barrier();
        done += 50;
      });
    }
    for (auto& t : threads) t.join();
    require(done == 200, "barriers lost");
  });
  EXPECT_EQ(failures(results), "");
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

}  // namespace
}  // namespace braid::testing
