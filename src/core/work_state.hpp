// The shared completion state behind a braid::Work.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>

namespace braid::core {

struct WorkState {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;

  void finish(std::exception_ptr e) {
    {
      std::lock_guard lock(mu);
      done = true;
      error = std::move(e);
    }
    cv.notify_all();
  }
};

}  // namespace braid::core
