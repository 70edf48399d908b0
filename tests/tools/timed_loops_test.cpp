// The timed loops every library's rows come from: how many calls a loop makes, and that all ranks agree on it.
#include "bench/timed_loops.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace braid::tools {
namespace {

// A call that takes about `micros` of this thread's time.
void busyFor(double micros) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(micros);
  while (std::chrono::steady_clock::now() < end) {
  }
}

BenchOptions loopOptions(int iterations, int warmup, int minLoopMs) {
  BenchOptions o;
  o.iterations = iterations;
  o.warmup = warmup;
  o.repetitions = 3;
  o.minLoopMs = minLoopMs;
  return o;
}

TEST(TimedLoops, ScaledCallsGrowTowardTheTargetWithinBounds) {
  EXPECT_EQ(scaledCalls(20, 0.001, 0.020), 400);    // 1 ms for 20 calls: 400 make 20 ms
  EXPECT_EQ(scaledCalls(20, 0.040, 0.020), 20);     // already longer than the target: never fewer than asked
  EXPECT_EQ(scaledCalls(0, 0.001, 0.002), 2);       // at least one call to start from
  EXPECT_EQ(scaledCalls(20, 0.0, 0.020), 20 * 64);  // a loop too short to read grows by one step's most
  EXPECT_EQ(scaledCalls(1 << 23, 1e-9, 1.0), kMaxLoopCalls);
}

TEST(TimedLoops, WithoutAMinimumEveryLoopMakesTheAskedCalls) {
  const BenchOptions o = loopOptions(7, 2, 0);
  int calls = 0, barriers = 0;
  const LoopTiming t = timeLoops(
      o, [&] { ++calls; }, [&] { ++barriers; }, [](double s) { return s; });
  EXPECT_EQ(t.iterations, 7);
  EXPECT_EQ(calls, 2 + 3 * 7);
  EXPECT_EQ(barriers, 3);
  EXPECT_GE(t.secondsPerCall, 0.0);
}

TEST(TimedLoops, AMinimumLengthRaisesTheCallsPerLoop) {
  const BenchOptions o = loopOptions(5, 1, 10);
  const LoopTiming t = timeLoops(
      o, [] { busyFor(20); }, [] {}, [](double s) { return s; });
  // About 500 calls of 20 us make 10 ms; a loaded machine stretches calls, so only the order of magnitude is sure.
  EXPECT_GT(t.iterations, 50);
  EXPECT_LT(t.iterations, 5000);
  EXPECT_GT(t.secondsPerCall * t.iterations, 0.002);
  EXPECT_GT(t.secondsPerCall, 15e-6);
}

// Where -n calls already fill the minimum, no loop is added.
TEST(TimedLoops, LongCallsAddNoLoop) {
  const BenchOptions o = loopOptions(5, 1, 5);
  int calls = 0;
  const LoopTiming t = timeLoops(
      o,
      [&] {
        ++calls;
        busyFor(2000);
      },
      [] {}, [](double s) { return s; });
  EXPECT_EQ(t.iterations, 5);
  EXPECT_EQ(calls, 1 + 3 * 5);
}

// A count set from a loop something else slowed (here the first two calls take 2 ms, the rest 10 us) is too small:
// the loops that come out too short are not counted, and the count is scaled until a loop fills the minimum.
TEST(TimedLoops, LoopsCutShortBySlowCallsAreRecounted) {
  const BenchOptions o = loopOptions(5, 1, 10);
  int calls = 0;
  const LoopTiming t = timeLoops(
      o, [&] { busyFor(calls++ < 2 ? 2000 : 10); }, [] {}, [](double s) { return s; });
  EXPECT_GT(t.iterations, 100);
  EXPECT_LT(t.secondsPerCall, 100e-6);
  EXPECT_GT(t.secondsPerCall * t.iterations, 0.005);
}

// Every rank must make the same number of calls, so the count follows the slowest rank's time, which `slowest`
// returns to all of them: a rank ten times faster than its slowest peer settles on the peer's count.
TEST(TimedLoops, TheSlowestRanksTimeSetsTheCount) {
  const BenchOptions o = loopOptions(5, 0, 10);
  const LoopTiming alone = timeLoops(
      o, [] { busyFor(20); }, [] {}, [](double s) { return s; });
  const LoopTiming behindAPeer = timeLoops(
      o, [] { busyFor(20); }, [] {}, [](double s) { return s * 10; });
  EXPECT_LT(behindAPeer.iterations * 4, alone.iterations);
  EXPECT_GT(behindAPeer.secondsPerCall, 150e-6);  // the peer's time per call is what the row reports
}

// A call that sleeps is a voluntary switch of the calling thread; one that only computes is none. The counts are the
// kept loops' and go through `slowest` like the times, so every rank reports the most any rank had.
TEST(TimedLoops, SleepsAreCountedAsVoluntarySwitchesPerCall) {
  const BenchOptions o = loopOptions(20, 1, 0);
  const LoopTiming sleeping = timeLoops(
      o, [] { std::this_thread::sleep_for(std::chrono::microseconds(200)); }, [] {}, [](double s) { return s; });
  EXPECT_GE(sleeping.voluntarySwitchesPerCall, 0.9);
  EXPECT_LE(sleeping.voluntarySwitchesPerCall, 2.0);
  EXPECT_GE(sleeping.involuntarySwitchesPerCall, 0.0);
  const LoopTiming busy = timeLoops(
      o, [] { busyFor(50); }, [] {}, [](double s) { return s; });
  EXPECT_LT(busy.voluntarySwitchesPerCall, 0.2);
  const LoopTiming behindAPeer = timeLoops(
      o, [] { busyFor(50); }, [] {}, [](double s) { return s + 3; });
  EXPECT_GE(behindAPeer.voluntarySwitchesPerCall, 3.0);  // the peer's count, as `slowest` returned it
}

}  // namespace
}  // namespace braid::tools
