// The c10d::Work of one braid op. CPU ops run on the communicator's progress thread and finish later: the Work
// completes (and its future resolves with the op's outputs) when braid reports the op done and the op's last steps
// (copies back into non-contiguous or list outputs) ran. CUDA ops are queued on the caller's current stream and
// complete at once, as NCCL's do: the future carries the device, so torch orders whoever waits on it after the
// stream's work.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

namespace braid_torch {

class BraidWork final : public c10d::Work {
 public:
  /// `outputs` become the future's value; `keep` are tensors the op reads or writes that must live until it ends.
  /// `device`: the CUDA device of a CUDA op (its future records and waits on that device's current stream).
  BraidWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
            std::optional<c10::Device> device)
      : c10d::Work(rank, type),
        outputs_(std::move(outputs)),
        keep_(std::move(keep)),
        future_(device ? c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                                  std::vector<c10::Device>{*device})
                       : c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

  /// Called once, when the op finished (null: it succeeded); completes the works that follow this one too.
  void complete(std::exception_ptr error) {
    std::vector<c10::intrusive_ptr<BraidWork>> followers;
    {
      std::lock_guard lock(mu_);
      done_ = true;
      error_ = error;
      keep_.clear();
      followers.swap(followers_);
    }
    cv_.notify_all();
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(outputs_));
    }
    for (auto& w : followers) w->complete(error);
  }

  /// `other` completes with this work (the per-op works of a coalesced group complete with the group's).
  void completeAlso(c10::intrusive_ptr<BraidWork> other) {
    std::exception_ptr error;
    {
      std::lock_guard lock(mu_);
      if (!done_) {
        followers_.push_back(std::move(other));
        return;
      }
      error = error_;
    }
    other->complete(error);
  }

  bool isCompleted() override {
    std::lock_guard lock(mu_);
    return done_;
  }
  bool isSuccess() const override {
    std::lock_guard lock(mu_);
    return done_ && !error_;
  }
  std::exception_ptr exception() const override {
    std::lock_guard lock(mu_);
    return error_;
  }
  /// Waits for the op (at most `timeout` when it is positive: then a Timeout error); rethrows its error.
  bool wait(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mu_);
    if (timeout.count() > 0) {
      TORCH_CHECK(cv_.wait_for(lock, timeout, [this] { return done_; }),
                  "braid: Timeout: ", c10d::opTypeToString(opType_), " did not finish within ", timeout.count(), " ms");
    } else {
      // The op ends by its own deadline (the process group's timeout), so this wait ends too.
      cv_.wait(lock, [this] { return done_; });
    }
    if (error_) std::rethrow_exception(error_);
    return true;
  }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  std::vector<at::Tensor> result() override { return outputs_; }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_;
  std::vector<c10::intrusive_ptr<BraidWork>> followers_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace braid_torch
