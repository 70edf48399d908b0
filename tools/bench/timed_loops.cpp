#include "bench/timed_loops.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace braid::tools {

int scaledCalls(int calls, double seconds, double targetSeconds) {
  calls = std::max(calls, 1);
  // A loop too short to read (or a clock that did not move): grow by the most one step allows.
  const double factor = seconds > 0 ? targetSeconds / seconds : 64.0;
  const double scaled = std::ceil(static_cast<double>(calls) * std::max(factor, 1.0));
  return static_cast<int>(std::min(scaled, static_cast<double>(kMaxLoopCalls)));
}

LoopTiming timeLoops(const BenchOptions& o, const std::function<void()>& call, const std::function<void()>& barrier,
                     const std::function<double(double)>& slowest) {
  const auto loop = [&](int calls) {
    barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    return slowest(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  int calls = std::max(o.iterations, 1);
  if (o.minLoopMs <= 0) {
    for (int i = 0; i < o.warmup; ++i) call();
  } else {
    // The warm-up is timed like a loop: where -n calls at its pace (the first calls are the slowest) fill the target,
    // nothing is added, so sizes whose loops are long anyway cost no more than without a minimum.
    const double target = o.minLoopMs / 1e3;
    const double warmPerCall = o.warmup > 0 ? loop(o.warmup) / o.warmup : 0;
    // Otherwise grow a timed loop until it lasts a quarter of the target (at most 64 times longer a step, so that a
    // first loop slowed by something else cannot make the next one huge), then scale the count to the whole target.
    const bool grow = warmPerCall * calls < target;
    while (grow && calls < kMaxLoopCalls) {
      const double seconds = loop(calls);
      if (seconds >= target / 4) {
        calls = scaledCalls(calls, seconds, target);
        break;
      }
      calls = std::min(scaledCalls(calls, seconds, target / 4), calls * 64);  // calls < 2^24: no overflow
    }
  }
  std::vector<double> loops;
  const std::size_t reps = static_cast<std::size_t>(std::max(o.repetitions, 1));
  for (int recounts = 0; loops.size() < reps;) {
    const double seconds = loop(calls);
    // Something else slowed the loops that set the count (the ranks' cores taken, say): a loop under half the
    // minimum is too short to count. Scale the count by it and start the repetitions over, a few times at most.
    if (o.minLoopMs > 0 && seconds < o.minLoopMs / 2e3 && calls < kMaxLoopCalls && recounts < 4) {
      calls = scaledCalls(calls, seconds, o.minLoopMs / 1e3);
      loops.clear();
      ++recounts;
      continue;
    }
    loops.push_back(seconds / calls);
  }
  std::sort(loops.begin(), loops.end());
  return {loops[loops.size() / 2], calls};
}

}  // namespace braid::tools
