// The shared completion state behind a braid::Work.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace braid::core {

struct WorkState {
  using Callback = std::function<void(std::exception_ptr)>;

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  std::vector<Callback> callbacks;  // run once, by finish() or by onCompletion() when already done

  void finish(std::exception_ptr e) {
    std::vector<Callback> run;
    {
      std::lock_guard lock(mu);
      done = true;
      error = e;
      run.swap(callbacks);
    }
    cv.notify_all();
    // Outside the lock: a callback may look at this work (test, wait) or queue more calls.
    for (auto& callback : run) callback(e);
  }

  void onCompletion(Callback callback) {
    std::exception_ptr e;
    {
      std::lock_guard lock(mu);
      if (!done) {
        callbacks.push_back(std::move(callback));
        return;
      }
      e = error;
    }
    callback(e);
  }
};

}  // namespace braid::core
