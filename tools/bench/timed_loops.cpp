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
  for (int i = 0; i < o.warmup; ++i) call();
  // A loop under half the minimum is not kept: its count (-n at first, or one set from a loop something else slowed,
  // the ranks' cores taken, say) was too small. The count is scaled by that loop and the repetitions start over.
  // Every rank sees the same slowest time, so all make the same decision and the same number of calls.
  const double target = o.minLoopMs / 1e3;
  int calls = std::max(o.iterations, 1);
  std::vector<double> loops;
  const std::size_t reps = static_cast<std::size_t>(std::max(o.repetitions, 1));
  for (int recounts = 0; loops.size() < reps;) {
    const double seconds = loop(calls);
    if (seconds < target / 2 && calls < kMaxLoopCalls && recounts < kMaxRecounts) {
      calls = scaledCalls(calls, seconds, target);
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
