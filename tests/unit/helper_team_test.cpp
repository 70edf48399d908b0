// HelperTeam: a pass's pieces cover it exactly once, aligned, on at most threads() threads; the caller alone runs a
// pass of one thread or one piece; a piece's exception reaches the caller after every piece ran; passes back to
// back, with helpers asleep between them, lose no wake-up.
#include "algorithms/host/helper_team.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace braid::host {
namespace {

// The team runs no more threads than the caller's CPUs: tests of pieces on several threads need two.
bool hasTwoCpus() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 2;
}

struct Seen {
  std::mutex mu;
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  std::set<int> workers;
  std::set<std::thread::id> threads;
};

void runOnce(HelperTeam& team, std::size_t total, std::size_t minGrain, std::size_t align,
             std::vector<std::atomic<int>>& hits, Seen& seen) {
  auto piece = [&](std::size_t begin, std::size_t end, int worker) {
    for (std::size_t i = begin; i < end; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
    const std::lock_guard<std::mutex> lock(seen.mu);
    seen.pieces.emplace_back(begin, end);
    seen.workers.insert(worker);
    seen.threads.insert(std::this_thread::get_id());
  };
  team.run(total, minGrain, align, piece);
}

TEST(HelperTeam, PiecesCoverThePassOnceAlignedAndNoMoreThanTheThreads) {
  for (int threads : {1, 2, 3, 5}) {
    HelperTeam team(threads, 20);
    for (std::size_t total : {std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{1000}, std::size_t{4099},
                              std::size_t{100000}}) {
      for (std::size_t minGrain : {std::size_t{1}, std::size_t{16}, std::size_t{5000}}) {
        std::vector<std::atomic<int>> hits(total);
        Seen seen;
        runOnce(team, total, minGrain, 16, hits, seen);
        for (std::size_t i = 0; i < total; ++i) {
          ASSERT_EQ(hits[i].load(), 1) << "element " << i << " of " << total << ", " << threads << " threads";
        }
        EXPECT_LE(seen.pieces.size(), static_cast<std::size_t>(threads));
        for (const auto& [begin, end] : seen.pieces) {
          EXPECT_EQ(begin % 16, 0U) << begin;
          EXPECT_LT(begin, end);
          if (end != total) {
            EXPECT_GE(end - begin, minGrain);
          }
        }
        for (int w : seen.workers) {
          EXPECT_GE(w, 0);
          EXPECT_LT(w, threads);
        }
      }
    }
  }
}

TEST(HelperTeam, OneThreadOrOnePieceRunsOnTheCallerAlone) {
  HelperTeam alone(1, 20);
  std::vector<std::atomic<int>> hits(100000);
  Seen seen;
  runOnce(alone, hits.size(), 1, 1, hits, seen);
  ASSERT_EQ(seen.pieces.size(), 1U);
  EXPECT_EQ(seen.pieces[0], std::make_pair(std::size_t{0}, hits.size()));
  EXPECT_EQ(seen.threads, std::set<std::thread::id>{std::this_thread::get_id()});

  HelperTeam four(4, 20);
  std::vector<std::atomic<int>> few(1000);
  Seen once;
  runOnce(four, few.size(), 4096, 1, few, once);  // less than one grain: not cut
  ASSERT_EQ(once.pieces.size(), 1U);
  EXPECT_EQ(once.threads, std::set<std::thread::id>{std::this_thread::get_id()});

  int calls = 0;
  auto count = [&](std::size_t, std::size_t, int) { ++calls; };
  four.run(0, 1, 1, count);
  EXPECT_EQ(calls, 0);
}

TEST(HelperTeam, ThePiecesRunOnSeveralThreads) {
  if (!hasTwoCpus()) GTEST_SKIP() << "one CPU: the caller runs every piece";
  HelperTeam team(3, 1000);
  // Each piece waits until another thread has a piece too (or a second passes): the pass cannot end on one thread
  // alone unless the helpers never come.
  std::atomic<int> inside{0};
  std::set<std::thread::id> threads;
  std::mutex mu;
  auto piece = [&](std::size_t, std::size_t, int) {
    inside.fetch_add(1);
    {
      const std::lock_guard<std::mutex> lock(mu);
      threads.insert(std::this_thread::get_id());
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (inside.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  };
  team.run(3, 1, 1, piece);
  EXPECT_GE(threads.size(), 2U);
}

TEST(HelperTeam, APiecesExceptionReachesTheCallerAfterEveryPieceRan) {
  HelperTeam team(4, 0);
  std::atomic<std::size_t> ran{0};
  auto piece = [&](std::size_t begin, std::size_t end, int) {
    ran.fetch_add(end - begin);
    if (begin == 0) throw std::runtime_error("piece at 0 failed");
  };
  EXPECT_THROW(
      {
        try {
          team.run(4000, 1000, 1, piece);
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "piece at 0 failed");
          throw;
        }
      },
      std::runtime_error);
  EXPECT_EQ(ran.load(), 4000U);  // every piece ran, the one that threw too
  // The team is whole afterwards.
  std::vector<std::atomic<int>> hits(4000);
  Seen seen;
  runOnce(team, hits.size(), 1000, 1, hits, seen);
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

#if defined(__x86_64__) || defined(__i386__)
// The caller's floating-point mode (here flush-to-zero and denormals-are-zero) holds in every piece, whichever
// thread runs it: the reduction's bits must not depend on which thread took a piece.
TEST(HelperTeam, PiecesRunInTheCallersFloatingPointMode) {
  if (!hasTwoCpus()) GTEST_SKIP() << "one CPU: the caller runs every piece";
  HelperTeam team(3, 1000);
  const unsigned before = _mm_getcsr();
  _mm_setcsr(before | 0x8040);  // FTZ | DAZ
  const unsigned mode = _mm_getcsr() & ~0x3Fu;
  std::mutex mu;
  std::set<unsigned> seen;
  std::set<std::thread::id> threads;
  std::atomic<int> inside{0};
  auto piece = [&](std::size_t, std::size_t, int) {
    inside.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (inside.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    const std::lock_guard<std::mutex> lock(mu);
    seen.insert(_mm_getcsr() & ~0x3Fu);
    threads.insert(std::this_thread::get_id());
  };
  team.run(3, 1, 1, piece);
  _mm_setcsr(before);
  EXPECT_EQ(seen, std::set<unsigned>{mode});
  EXPECT_GE(threads.size(), 2U) << "the helpers never took a piece: the test saw the caller alone";
}
#endif

TEST(HelperTeam, PassesBackToBackLoseNoWakeUp) {
  // spin 0: helpers sleep between passes at once, so every pass wakes them (or runs without them): a lost wake-up
  // would leave a piece untaken and hang the test (ctest's timeout), a stale one would run a piece twice.
  for (long spin : {0L, 50L}) {
    HelperTeam team(3, spin);
    std::vector<std::atomic<int>> hits(3000);
    for (int pass = 1; pass <= 3000; ++pass) {
      auto piece = [&](std::size_t begin, std::size_t end, int) {
        for (std::size_t i = begin; i < end; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
      };
      team.run(hits.size(), 1, 1, piece);
    }
    for (auto& h : hits) ASSERT_EQ(h.load(), 3000);
  }
}

}  // namespace
}  // namespace braid::host
