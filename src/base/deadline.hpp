// A point in time after which a wait gives up. Every blocking wait in braid takes one. A deadline may also carry a
// cancel flag (set from another thread to abort a communicator's creation): it then counts as expired at once, and
// waits that sleep in the kernel sleep in slices of kCancelSliceMs so that they notice.
#pragma once

#include <atomic>
#include <chrono>

namespace braid {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(double seconds) {
    // Past a century a deadline is never: the clock counts nanoseconds in 64 bits, and a count past its range (a
    // BRAID_TIMEOUT of 1e20) would wrap to a deadline long gone, every wait failing at once.
    if (!(seconds < kNeverSeconds)) return never();
    Deadline d;
    d.at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    return d;
  }
  static Deadline never() { return Deadline{}; }
  static constexpr double kNeverSeconds = 100.0 * 365 * 24 * 3600;

  /// The same deadline, also ending when `*flag` becomes true.
  Deadline cancellable(const std::atomic<bool>* flag) const {
    Deadline d = *this;
    d.cancel_ = flag;
    return d;
  }
  const std::atomic<bool>* cancelFlag() const { return cancel_; }
  bool cancelled() const { return cancel_ && cancel_->load(std::memory_order_acquire); }

  bool expired() const { return cancelled() || (at_ != Clock::time_point::max() && Clock::now() >= at_); }
  bool infinite() const { return at_ == Clock::time_point::max(); }
  Clock::time_point at() const { return at_; }
  /// Seconds left, 0 when expired; a large number when infinite.
  double secondsLeft() const {
    if (cancelled()) return 0;
    if (infinite()) return 1e9;
    const auto left = std::chrono::duration<double>(at_ - Clock::now()).count();
    return left > 0 ? left : 0;
  }
  /// How long a wait in the kernel may sleep at most before it looks at the cancel flag again.
  static constexpr int kCancelSliceMs = 50;

 private:
  Clock::time_point at_ = Clock::time_point::max();
  const std::atomic<bool>* cancel_ = nullptr;
};

}  // namespace braid
