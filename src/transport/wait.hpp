// Waiting on a 32-bit word in memory shared by ranks: bounded spin, then futex sleep in short slices, so an idle
// rank burns no core, a busy one wakes within ~1 us, and every wait ends by its deadline or a failure check.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

#include "base/deadline.hpp"
#include "base/function_ref.hpp"

namespace braid::transport {

struct WaitPolicy {
  long spinMicros = 100;            // how long to spin before sleeping in the kernel
  bool yieldWhileSpinning = false;  // ranks outnumber cores: give the core away instead of pausing
  double timeoutSeconds = 600;
  /// The call's deadline, shared by its waits: set by the first wait that has to sleep, so that a wait answered
  /// while spinning reads no clock (a clock read is a system call on some virtual machines).
  std::optional<Deadline>* deadline = nullptr;
  /// Called between sleep slices (every few ms); throws to end the wait (peer lost, aborted, ...). Both callbacks
  /// refer to callables the waiter keeps alive for the wait.
  FunctionRef<void()> check;
  /// Called when the deadline passes; must throw (Timeout naming what was awaited).
  FunctionRef<void()> onTimeout;
  /// How long one sleep lasts before `check` runs again; 0: kSleepSliceMicros.
  long sliceMicros = 0;
};

/// A word with a waiter count beside it, so that posting costs no system call when nobody sleeps. Where it lives
/// (alone on its cache line, or beside the data it announces) is the layout's choice.
struct WaitWord {
  std::atomic<std::uint32_t> value{0};
  std::atomic<std::uint32_t> sleepers{0};
};
static_assert(sizeof(WaitWord) == 8);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

/// True when `value` has reached `target` in wrap-around order (counters are 32-bit and may wrap).
inline bool reached(std::uint32_t value, std::uint32_t target) {
  return static_cast<std::int32_t>(value - target) >= 0;
}

/// Stores `value` and wakes sleepers of `word`, if any.
void post(WaitWord& word, std::uint32_t value);
/// post() in two halves, for a poster that waits for its peers right after: the store, which does not hold this
/// core until the word's cache line is its own (that line's transfer then overlaps the poster's first look at its
/// peers' words), and the wake of the sleepers, which must follow before the poster waits for anything its sleepers
/// do not already hold, or end its call. A sleeper registers before it sleeps, so either it sees the value or
/// wakeSleepers() sees it.
void postQuietly(WaitWord& word, std::uint32_t value);
void wakeSleepers(WaitWord& word);
/// Adds one to `word` and wakes its sleepers, if any.
void bump(WaitWord& word);
void cpuRelax();
void yieldCore();
/// 20 ms: short enough that a dead peer or an abort is noticed quickly, long enough that a sleeping rank costs ~50
/// wake-ups a second.
inline constexpr long kSleepSliceMicros = 20'000;
/// Sleeps until `word.value` may differ from `seen` or `sliceMicros` pass (0: kSleepSliceMicros), registered as a
/// sleeper.
void sleepWhileEqual(WaitWord& word, std::uint32_t seen, long sliceMicros = 0);

/// Polls a wait makes before it starts pausing between them: a load that hits the core's own cache takes a few
/// cycles, so 256 of them last well under a microsecond, about as long as a peer on another core usually takes.
inline constexpr unsigned kEagerPolls = 256;

/// Returns once `ready(word.value)` holds; otherwise policy.check / policy.onTimeout throw.
template <typename Ready>
void waitUntil(WaitWord& word, Ready&& ready, const WaitPolicy& policy) {
  // Spin for a bounded time. The first kEagerPolls polls follow each other without a pause: a pause lasts up to
  // ~140 cycles on recent Intel server cores, and a peer that arrives during one is seen only after it, on the path
  // of every small call. Then every 64 tries read the clock; after the first 5 us also give the core away at each
  // check: free when nothing else wants the core, and when something does (the peer we wait for, sharing our core
  // under load) it runs now rather than after our spin budget. Not sooner: on some virtual machines a sched_yield
  // costs a microsecond, more than a peer usually takes to arrive.
  if (policy.spinMicros > 0) {
    using Clock = std::chrono::steady_clock;
    Clock::time_point start{};  // read at the first check, not before
    for (unsigned i = 1;; ++i) {
      if (ready(word.value.load(std::memory_order_acquire))) return;
      if (policy.yieldWhileSpinning) {
        yieldCore();
      } else if (i > kEagerPolls) {
        cpuRelax();
      }
      if (i % 64 == 0) {
        const auto now = Clock::now();
        if (start == Clock::time_point{}) start = now;
        const auto spun = now - start;
        if (spun >= std::chrono::microseconds(policy.spinMicros)) break;
        if (!policy.yieldWhileSpinning && spun >= std::chrono::microseconds(5)) yieldCore();
      }
    }
  }
  std::optional<Deadline> local;
  std::optional<Deadline>& deadline = policy.deadline ? *policy.deadline : local;
  if (!deadline) deadline = Deadline::after(policy.timeoutSeconds);
  while (true) {
    const std::uint32_t seen = word.value.load(std::memory_order_acquire);
    if (ready(seen)) return;
    if (policy.check) policy.check();
    if (deadline->expired()) {
      if (policy.onTimeout) policy.onTimeout();
      return;  // onTimeout throws; returning still never waits past the deadline
    }
    sleepWhileEqual(word, seen, policy.sliceMicros);
  }
}

}  // namespace braid::transport
