// A thread that runs a function every `interval` until destroyed: the heartbeats of a communicator. It sleeps on a
// condition variable, so destruction is prompt, and runs at normal priority, so a busy process still beats.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace braid::transport {

class Ticker {
 public:
  /// Starts ticking (nothing happens when intervalSeconds <= 0). `tick` must not throw.
  Ticker(double intervalSeconds, std::function<void()> tick);
  ~Ticker();
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace braid::transport
