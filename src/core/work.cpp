#include "braid/braid.hpp"
#include "core/work_state.hpp"

namespace braid {

bool Work::test() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mu);
  return state_->done;
}

bool Work::wait(std::chrono::milliseconds timeout) const {
  if (!state_) return true;
  std::unique_lock lock(state_->mu);
  if (timeout.count() > 0) {
    if (!state_->cv.wait_for(lock, timeout, [this] { return state_->done; })) return false;
  } else {
    // The operation itself ends by its own deadline (BRAID_TIMEOUT), so this wait is bounded too.
    state_->cv.wait(lock, [this] { return state_->done; });
  }
  if (state_->error) std::rethrow_exception(state_->error);
  return true;
}

int Work::source() const {
  if (!state_ || !source_) return -1;
  // The engine wrote it before the operation finished, which the lock orders before this read.
  std::lock_guard lock(state_->mu);
  return state_->done && !state_->error ? *source_ : -1;
}

void Work::onCompletion(std::function<void(std::exception_ptr)> callback) const {
  // A callback's exception must not escape into the progress thread (or into whoever finished the operation).
  auto guarded = [callback = std::move(callback)](std::exception_ptr e) {
    try {
      callback(e);
    } catch (...) {  // NOLINT(bugprone-empty-catch): documented: a callback's exception is swallowed
    }
  };
  if (!state_) {
    guarded(nullptr);
    return;
  }
  state_->onCompletion(std::move(guarded));
}

}  // namespace braid
