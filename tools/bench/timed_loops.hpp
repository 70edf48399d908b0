// nccl-tests' timed loops, one implementation for braid's sweep and the peers' drivers, so that no library is timed
// differently: warm-up calls, then --reps loops of back-to-back calls, each started after a barrier; a loop's time
// per call is its slowest rank's, and the median loop counts (the upper middle for an even count).
#pragma once

#include <functional>

#include "bench/bench_options.hpp"

namespace braid::tools {

struct LoopTiming {
  double secondsPerCall = 0;  // the median loop's, as the slowest rank saw it
  int iterations = 0;         // calls per timed loop
  /// Context switches of the calling thread per call over the kept loops, the most any rank had: voluntary ones
  /// are sleeps (a futex wait, a blocking read), involuntary ones a core taken away (preemption, or a yield that
  /// let another thread run). Negative where the system does not count them.
  double voluntarySwitchesPerCall = -1;
  double involuntarySwitchesPerCall = -1;
};

/// Times `call` as above. With options.minLoopMs > 0 a loop makes more calls than options.iterations where that
/// many would take less than minLoopMs: a timed loop under half the minimum is not kept, and the count is scaled by
/// it (by the slowest rank's time, so every rank settles on the same count) before the repetitions start over, at
/// most kMaxRecounts times. `barrier` and `slowest` (the maximum over ranks) are collectives every rank calls alike.
/// The calling thread's context switches are counted around each timed loop, outside its clock.
LoopTiming timeLoops(const BenchOptions& options, const std::function<void()>& call,
                     const std::function<void()>& barrier, const std::function<double(double)>& slowest);

/// Calls per loop for a loop of `calls` that took `seconds`, raised toward `targetSeconds` (never below `calls`,
/// never above kMaxLoopCalls). Pure, for the tests.
int scaledCalls(int calls, double seconds, double targetSeconds);

inline constexpr int kMaxLoopCalls = 1 << 24;
inline constexpr int kMaxRecounts = 8;

}  // namespace braid::tools
