// The c10d::Work of one braid op. CPU ops run on the communicator's progress thread and finish later: the Work
// completes (and its future resolves with the op's outputs) when braid reports the op done and the op's last steps
// (copies back into non-contiguous or list outputs) ran. CUDA ops are queued on braid's stream (after the caller's
// stream's work) and complete at once, with an event at their end on that stream, as NCCL's do: wait() makes the
// caller's current stream wait for that event (the host does not wait), and the future, which carries the device,
// orders whoever waits on it after braid's stream.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

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
  /// `end`: for a CUDA op, the event at its end on braid's stream (the future's events go on that stream too).
  void complete(std::exception_ptr error, std::shared_ptr<c10::Event> end = nullptr) {
    std::vector<c10::intrusive_ptr<BraidWork>> followers;
    {
      std::lock_guard lock(mu_);
      done_ = true;
      error_ = error;
      end_ = end;
      keep_.clear();
      followers.swap(followers_);
    }
    cv_.notify_all();
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(outputs_));
    }
    for (auto& w : followers) w->complete(error, end);
  }

  /// A CUDA op queued on `stream` (braid's): completes now, with an event at the op's end on that stream; the
  /// future (and those of the works that follow this one) record their events on that stream too.
  void completeOn(const c10::Stream& stream) {
    auto end = std::make_shared<c10::Event>(c10::DeviceType::CUDA);
    end->record(stream);
    const c10::StreamGuard onBraidsStream(stream);
    complete(nullptr, std::move(end));
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
    return done_ && (!end_ || end_->query());
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
    if (done_ && end_) {
      // A CUDA op: the caller's current stream waits for braid's (the host goes on at once, as with NCCL).
      end_->block(c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)
                      ->getStream(c10::Device(c10::DeviceType::CUDA, end_->device_index())));
      return true;
    }
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
  std::shared_ptr<c10::Event> end_;  // CUDA ops: their end on braid's stream
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_;
  std::vector<c10::intrusive_ptr<BraidWork>> followers_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace braid_torch
