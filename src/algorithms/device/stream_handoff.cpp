#include "algorithms/device/stream_handoff.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <mutex>
#include <thread>

#include "algorithms/device/call_stream.hpp"
#include "algorithms/device/device_scope.hpp"
#include "algorithms/device/event_wait.hpp"
#include "base/logging.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/stream_writes.hpp"

namespace braid::device {

namespace {

using cuda::checkCuda;

// The smallest arena: a sweep of growing calls reallocates a few times, not at every size.
constexpr std::size_t kMinArenaBytes = std::size_t{1} << 20;
// How long a closing handoff waits for the last call's copies back before it keeps its memory rather than free it
// under them (a stream held by other work of its caller).
constexpr auto kCloseGrace = std::chrono::seconds(2);

// Lets this thread make calls CUDA refuses while one of its streams is being captured (cudaHostAlloc), for a scope.
class RelaxedCapture {
 public:
  RelaxedCapture() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

class PinnedHandoff final : public StreamHandoff {
 public:
  PinnedHandoff(int device, int rank) : device_(device), rank_(rank) {
    const DeviceScope scope(device_);
    // Made at the first detached call, which may come while the caller captures another stream: these allocations
    // are no part of any graph.
    const RelaxedCapture relaxed;
    void* word = nullptr;
    checkCuda(cudaHostAlloc(&word, sizeof(std::uint64_t), cudaHostAllocMapped | cudaHostAllocPortable),
              "cudaHostAlloc(the handoff's release word)");
    word_ = static_cast<std::uint64_t*>(word);
    *word_ = 0;
    void* mapped = nullptr;
    checkCuda(cudaHostGetDevicePointer(&mapped, word, 0), "cudaHostGetDevicePointer(the handoff's release word)");
    deviceWord_ = mapped;
    checkCuda(cudaEventCreateWithFlags(&lastOut_, cudaEventDisableTiming), "cudaEventCreate(handoff)");
  }

  ~PinnedHandoff() override {
    releaseAll();
    bool idle = !haveLast_;
    const auto until = std::chrono::steady_clock::now() + kCloseGrace;
    while (!idle && std::chrono::steady_clock::now() < until) {
      const cudaError_t status = cudaEventQuery(lastOut_);
      idle = status != cudaErrorNotReady;  // done, or the context is gone with its streams
      if (!idle) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    (void)cudaGetLastError();
    for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
    (void)cudaEventDestroy(lastOut_);
    if (!idle) {
      // A stream still due to read the word or copy from the arena: freeing them under it would fault.
      logLine(LogLevel::kWarn, rank_,
              "a stream still had a detached call's copies queued when the communicator closed: its pinned staging "
              "memory is left allocated");
      return;
    }
    retired_.push_back(arena_);
    for (std::byte* a : retired_) {
      if (a != nullptr) (void)cudaFreeHost(a);
    }
    (void)cudaFreeHost(word_);
  }

  Ticket issue(std::span<const DeviceExtent> extents, CUstream_st* raw, const CallContext& ctx) override {
    const auto stream = reinterpret_cast<cudaStream_t>(raw);
    if (capturing(stream)) {
      fail(ErrorCode::kUnavailable, ctx, ctx.op,
           " on device buffers cannot be captured into a CUDA graph here: its host part runs on the "
           "communicator's progress thread (CallOptions::streamAsync; ranks sharing a GPU or spanning hosts)");
    }
    const DeviceScope scope(device_);
    const StagingLayout layout = layOutStaging(extents);
    std::byte* base = arena(layout.arenaBytes);
    Ticket ticket;
    ticket.copies.reserve(extents.size());
    for (const std::size_t offset : layout.offsets) {
      ticket.copies.push_back(offset == StagingLayout::kNone ? nullptr : base + offset);
    }
    // One arena serves every call: a call on another stream than the last one starts after its copies back.
    if (haveLast_ && raw != lastStream_) {
      checkCuda(cudaStreamWaitEvent(stream, lastOut_, 0), "cudaStreamWaitEvent(the previous detached call)");
    }
    for (const ExtentCopy& c : layout.copiesIn) {
      checkCuda(cudaMemcpyAsync(base + c.offset, reinterpret_cast<const void*>(c.device), c.bytes,
                                cudaMemcpyDeviceToHost, stream),
                "cudaMemcpyAsync(a detached call's input)");
    }
    ticket.event = takeEvent();
    try {
      checkCuda(cudaEventRecord(events_[static_cast<std::size_t>(ticket.event)], stream),
                "cudaEventRecord(a detached call's inputs)");
      ticket.number = issued_.load(std::memory_order_relaxed) + 1;
      const cuda::StreamWord wait{cuda::StreamWord::Kind::kWaitAtLeast, deviceWord_, ticket.number};
      cuda::queueStreamWords(&wait, 1, stream, "cuStreamBatchMemOp(wait for a detached call's host part)");
    } catch (...) {
      giveBack(ticket.event);
      throw;
    }
    issued_.store(ticket.number, std::memory_order_release);
    lastStream_ = raw;
    haveLast_ = true;
    // The wait is queued: from here the ticket must be released in its turn, so a failure is the call's own.
    try {
      for (const ExtentCopy& c : layout.copiesOut) {
        checkCuda(cudaMemcpyAsync(reinterpret_cast<void*>(c.device), base + c.offset, c.bytes, cudaMemcpyHostToDevice,
                                  stream),
                  "cudaMemcpyAsync(a detached call's result)");
      }
      checkCuda(cudaEventRecord(lastOut_, stream), "cudaEventRecord(a detached call's results)");
    } catch (const Error& e) {
      ticket.failure = e;
    }
    return ticket;
  }

  void awaitInputs(const Ticket& ticket, const OpEnv& env) override {
    const DeviceScope scope(device_);
    cudaEvent_t event = nullptr;
    {
      std::lock_guard lock(mu_);
      event = events_[static_cast<std::size_t>(ticket.event)];
    }
    try {
      waitForEvent(event, env, "copying the call's inputs to host memory");
    } catch (...) {
      giveBack(ticket.event);
      throw;
    }
    giveBack(ticket.event);
  }

  void release(std::uint64_t number) noexcept override { raiseWord(number); }

  void releaseAll() noexcept override { raiseWord(issued_.load(std::memory_order_acquire)); }

 private:
  // The word only grows: the streams wait for "at least".
  void raiseWord(std::uint64_t value) noexcept {
    std::atomic_ref<std::uint64_t> word(*word_);
    std::uint64_t now = word.load(std::memory_order_relaxed);
    while (now < value && !word.compare_exchange_weak(now, value, std::memory_order_release)) {
    }
  }

  // The arena for a call of `bytes`. A larger one replaces it; the old one may still be read by queued copies, so
  // it is kept until the handoff closes (the arenas grow by powers of two: at most twice the largest in all).
  std::byte* arena(std::size_t bytes) {
    if (arena_ != nullptr && capacity_ >= bytes) return arena_;
    const std::size_t rounded = std::max(std::bit_ceil(std::max<std::size_t>(bytes, 1)), kMinArenaBytes);
    void* p = nullptr;
    checkCuda(cudaHostAlloc(&p, rounded, cudaHostAllocPortable), "cudaHostAlloc(a detached call's staging arena)");
    if (arena_ != nullptr) retired_.push_back(arena_);
    arena_ = static_cast<std::byte*>(p);
    capacity_ = rounded;
    return arena_;
  }

  int takeEvent() {
    std::lock_guard lock(mu_);
    if (!free_.empty()) {
      const int e = free_.back();
      free_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    checkCuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate(handoff)");
    events_.push_back(e);
    return static_cast<int>(events_.size() - 1);
  }

  void giveBack(int event) {
    std::lock_guard lock(mu_);
    free_.push_back(event);
  }

  const int device_;
  const int rank_;
  std::uint64_t* word_ = nullptr;  // pinned and mapped: the number of the last call released
  void* deviceWord_ = nullptr;     // the same word, as the GPU addresses it
  std::atomic<std::uint64_t> issued_{0};

  std::mutex mu_;  // the events: taken at issue, given back by the progress thread
  std::vector<cudaEvent_t> events_;
  std::vector<int> free_;

  // The issuing side's own (core issues one ticket at a time).
  std::byte* arena_ = nullptr;
  std::size_t capacity_ = 0;
  std::vector<std::byte*> retired_;
  cudaEvent_t lastOut_ = nullptr;  // after the latest call's copies back
  CUstream_st* lastStream_ = nullptr;
  bool haveLast_ = false;
};

}  // namespace

std::unique_ptr<StreamHandoff> makeStreamHandoff(int device, int rank) {
  const DeviceScope scope(device);
  if (!cuda::streamWordsSupported()) {
    logLine(LogLevel::kInfo, rank,
            "this GPU's driver queues no 64-bit stream waits: calls on device buffers that are staged hold their "
            "caller until they end");
    return nullptr;
  }
  return std::make_unique<PinnedHandoff>(device, rank);
}

}  // namespace braid::device
