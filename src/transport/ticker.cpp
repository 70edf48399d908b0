#include "transport/ticker.hpp"

#include "base/threads.hpp"

namespace braid::transport {

Ticker::Ticker(double intervalSeconds, std::function<void()> tick) {
  if (intervalSeconds <= 0) return;
  const auto interval =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(intervalSeconds));
  thread_ = startThread("the heartbeat thread", [this, interval, tick = std::move(tick)] {
    std::unique_lock lock(mu_);
    while (!stop_) {
      lock.unlock();
      tick();
      lock.lock();
      cv_.wait_for(lock, interval, [this] { return stop_; });
    }
  });
}

Ticker::~Ticker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace braid::transport
