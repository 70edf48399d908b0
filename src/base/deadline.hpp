// A point in time after which a wait gives up. Every blocking wait in braid takes one.
#pragma once

#include <chrono>

namespace braid {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(double seconds) {
    Deadline d;
    d.at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    return d;
  }
  static Deadline never() { return Deadline{}; }

  bool expired() const { return at_ != Clock::time_point::max() && Clock::now() >= at_; }
  bool infinite() const { return at_ == Clock::time_point::max(); }
  Clock::time_point at() const { return at_; }
  /// Seconds left, 0 when expired; a large number when infinite.
  double secondsLeft() const {
    if (infinite()) return 1e9;
    const auto left = std::chrono::duration<double>(at_ - Clock::now()).count();
    return left > 0 ? left : 0;
  }

 private:
  Clock::time_point at_ = Clock::time_point::max();
};

}  // namespace braid
