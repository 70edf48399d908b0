#include "bench/timed_loops.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace braid::tools {

namespace {

struct Switches {
  long voluntary = 0;
  long involuntary = 0;
  bool counted = false;
};

// This thread's switches so far (RUSAGE_THREAD: a rank's other threads, or another rank's, are not its calls').
Switches threadSwitches() {
  rusage u{};
  if (::getrusage(RUSAGE_THREAD, &u) != 0) return {};
  return {u.ru_nvcsw, u.ru_nivcsw, true};
}

}  // namespace

int scaledCalls(int calls, double seconds, double targetSeconds) {
  calls = std::max(calls, 1);
  // A loop too short to read (or a clock that did not move): grow by the most one step allows.
  const double factor = seconds > 0 ? targetSeconds / seconds : 64.0;
  const double scaled = std::ceil(static_cast<double>(calls) * std::max(factor, 1.0));
  return static_cast<int>(std::min(scaled, static_cast<double>(kMaxLoopCalls)));
}

LoopTiming timeLoops(const BenchOptions& o, const std::function<void()>& call, const std::function<void()>& barrier,
                     const std::function<double(double)>& slowest) {
  const Switches none{0, 0, true};
  Switches inLoops = none;  // over the loops kept so far; counted while every read succeeded
  const auto loop = [&](int calls) {
    barrier();
    const Switches before = threadSwitches();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Switches after = threadSwitches();
    inLoops.voluntary += after.voluntary - before.voluntary;
    inLoops.involuntary += after.involuntary - before.involuntary;
    inLoops.counted = inLoops.counted && before.counted && after.counted;
    return slowest(seconds);
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
      inLoops = none;
      ++recounts;
      continue;
    }
    loops.push_back(seconds / calls);
  }
  std::sort(loops.begin(), loops.end());
  LoopTiming timing{loops[loops.size() / 2], calls};
  // Every rank asks alike; a rank that could not count gives -1, so a row says -1 only where no rank could.
  const double made = static_cast<double>(calls) * static_cast<double>(loops.size());
  timing.voluntarySwitchesPerCall = slowest(inLoops.counted ? inLoops.voluntary / made : -1.0);
  timing.involuntarySwitchesPerCall = slowest(inLoops.counted ? inLoops.involuntary / made : -1.0);
  return timing;
}

}  // namespace braid::tools
