// The c10d::Work of one braid op. CPU ops run on the communicator's progress thread and finish later: the Work
// completes (and its future resolves with the op's outputs) when braid reports the op done and the op's last steps
// (copies back into non-contiguous or list outputs) ran. CUDA ops are queued on braid's stream (after the caller's
// stream's work) and complete at once, with an event at their end on that stream, as NCCL's do: wait() makes the
// caller's current stream wait for that event (the host does not wait), and the future, which carries the device,
// orders whoever waits on it after braid's stream. CUDA ops the caller waits for at once (async_op=False) ran on its
// current stream and need no event.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

namespace braid_torch {

class BraidWork final : public c10d::Work {
 public:
  /// `outputs` become the future's value; `keep` are tensors the op reads or writes that must live until it ends.
  /// `device`: the CUDA device of a CUDA op (its future records and waits on the stream the op ran on).
  BraidWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
            std::optional<c10::Device> device)
      : c10d::Work(rank, type), outputs_(std::move(outputs)), keep_(std::move(keep)), device_(device) {}

  /// Called once, when the op finished (null: it succeeded); completes the works that follow this one too.
  void complete(std::exception_ptr error) { finish(error, std::nullopt, nullptr); }

  /// A CUDA op queued on `stream`: completes now. With `endEvent`, an event at the op's end on that stream, which
  /// wait() makes the caller's stream wait on (braid's own stream); without, the op ran on the caller's stream.
  /// The future (made when asked for) and those of the works that follow this one are ordered on `stream` too.
  void completeOn(const c10::Stream& stream, bool endEvent) {
    std::shared_ptr<c10::Event> end;
    if (endEvent) {
      end = std::make_shared<c10::Event>(c10::DeviceType::CUDA);
      end->record(stream);
    }
    finish(nullptr, stream, std::move(end));
  }

  /// `other` completes with this work (the per-op works of a coalesced group complete with the group's).
  void completeAlso(c10::intrusive_ptr<BraidWork> other) {
    std::exception_ptr error;
    std::optional<c10::Stream> stream;
    std::shared_ptr<c10::Event> end;
    {
      std::lock_guard lock(mu_);
      if (!done_) {
        followers_.push_back(std::move(other));
        return;
      }
      error = error_;
      stream = stream_;
      end = end_;
    }
    other->finish(error, stream, end);
  }

  bool isCompleted() override {
    std::lock_guard lock(mu_);
    if (!done_) return false;
    if (end_) return end_->query();
    return !stream_ || stream_->query();
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
    if (done_ && stream_) {
      // A CUDA op: the caller's current stream waits for the op's (the host goes on at once, as with NCCL). An op
      // that ran on the caller's stream needs nothing, unless the caller moved to another stream since: then an
      // event recorded now (after the op, and maybe after later work) orders it.
      const c10::Stream current = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)
                                      ->getStream(c10::Device(c10::DeviceType::CUDA, stream_->device_index()));
      if (end_) {
        end_->block(current);
      } else if (current != *stream_) {
        c10::Event now(c10::DeviceType::CUDA);
        now.record(*stream_);
        now.block(current);
      }
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
  /// Made at the first ask: most ops' futures are never looked at, and a CUDA future records events when it is
  /// marked complete.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    c10::intrusive_ptr<c10::ivalue::Future> future;
    bool markNow = false;
    {
      std::lock_guard lock(mu_);
      if (!future_) {
        future_ = device_ ? c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                                     std::vector<c10::Device>{*device_})
                          : c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
        markNow = done_;
      }
      future = future_;
    }
    if (markNow) markFuture(future);
    return future;
  }
  std::vector<at::Tensor> result() override { return outputs_; }

  /// A receive from any source: `source` says its sender once it completed (-1 before).
  void setSource(std::function<int()> source) {
    std::lock_guard lock(mu_);
    source_ = std::move(source);
  }
  int sourceRank() const override {
    std::function<int()> source;
    {
      std::lock_guard lock(mu_);
      TORCH_CHECK(source_, "braid: sourceRank() is known for a receive from any source only");
      TORCH_CHECK(done_ && !error_, "braid: sourceRank() is known once the receive completed successfully");
      source = source_;
    }
    return source();
  }

 private:
  void finish(std::exception_ptr error, std::optional<c10::Stream> stream, std::shared_ptr<c10::Event> end) {
    std::vector<c10::intrusive_ptr<BraidWork>> followers;
    c10::intrusive_ptr<c10::ivalue::Future> future;
    {
      std::lock_guard lock(mu_);
      done_ = true;
      error_ = error;
      stream_ = stream;
      end_ = end;
      // A CUDA op's tensors stay with the stream (the caching allocator was told), a CPU op's are done with.
      keep_.clear();
      followers.swap(followers_);
      future = future_;
    }
    cv_.notify_all();
    if (future) markFuture(future);
    for (auto& w : followers) w->finish(error, stream, end);
  }

  /// Completes `future` with the outputs (or the error); a CUDA future records its events on the op's stream.
  void markFuture(const c10::intrusive_ptr<c10::ivalue::Future>& future) {
    if (error_) {
      future->setError(error_);
      return;
    }
    if (stream_) {
      const c10::StreamGuard onTheOpsStream(*stream_);
      future->markCompleted(c10::IValue(outputs_));
    } else {
      future->markCompleted(c10::IValue(outputs_));
    }
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::optional<c10::Stream> stream_;  // CUDA ops: the stream the op ran on
  std::shared_ptr<c10::Event> end_;    // CUDA ops on braid's stream: their end there
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_;
  std::optional<c10::Device> device_;
  std::vector<c10::intrusive_ptr<BraidWork>> followers_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::function<int()> source_;  // setSource
};

}  // namespace braid_torch
