#include "algorithms/device/staging.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <functional>

#include "algorithms/copied_call.hpp"
#include "algorithms/device/call_stream.hpp"
#include "algorithms/device/event_wait.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_reduce.hpp"
#include "cuda/runtime/stream_writes.hpp"

namespace braid::device {

// A staged call's host waits for the GPU between its steps (copies in, the host collective, copies out), which a
// stream being captured cannot do: refused by name before anything is queued or sent.
namespace {
void refuseCapture(const OpEnv& env) {
  if (env.stream == nullptr || !capturing(streamOf(env))) return;
  fail(ErrorCode::kUnavailable, env.context, env.context.op,
       " cannot be captured into a CUDA graph here: its device buffers are staged through host memory (ranks on "
       "several hosts, or processes sharing a GPU without braid's kernels), and its host waits for the GPU between "
       "steps");
}
}  // namespace

void waitForStream(const OpEnv& env) {
  if (env.stream != nullptr) {
    if (capturing(streamOf(env))) {
      fail(ErrorCode::kUnavailable, env.context, env.context.op,
           " on host buffers cannot be captured into a CUDA graph: its host waits for the stream's work first");
    }
    cuda::checkCuda(cudaStreamSynchronize(streamOf(env)), "cudaStreamSynchronize(the call's stream)");
  }
}

// The copies of one windowed allreduce (host/staged_buffer.hpp), all on the call's stream: in order, so a fetch into
// a slot follows the deliveries out of it that were started before.
class WindowedCopies final : public StagedBuffer {
 public:
  WindowedCopies(const void* send, void* recv, std::byte* slots[2], std::size_t windowBytes,
                 std::vector<cudaEvent_t>& events, cudaStream_t stream, bool reduceOnGpu,
                 std::function<std::byte*(std::size_t)> pinned)
      : reduceOnGpu_(reduceOnGpu),
        pinned_(std::move(pinned)),
        send_(static_cast<const std::byte*>(send)),
        recv_(static_cast<std::byte*>(recv)),
        slots_{slots[0], slots[1]},
        windowBytes_(windowBytes),
        events_(events),
        stream_(stream) {}

  std::size_t windowBytes() const override { return windowBytes_; }
  std::byte* slot(int which) override { return slots_[which]; }

  std::size_t fetch(std::byte* dst, std::size_t offset, std::size_t bytes) override {
    if (bytes > 0) {
      cuda::checkCuda(cudaMemcpyAsync(dst, send_ + offset, bytes, cudaMemcpyDeviceToHost, stream_),
                      "cudaMemcpyAsync(window in)");
    }
    return record();
  }

  void awaitFetched(std::size_t ticket, const OpEnv& env) override {
    waitForEvent(events_[ticket], env, "copying a window of the input from the GPU");
  }

  void deliver(const std::byte* src, std::size_t offset, std::size_t bytes) override {
    cuda::checkCuda(cudaMemcpyAsync(recv_ + offset, src, bytes, cudaMemcpyHostToDevice, stream_),
                    "cudaMemcpyAsync(window out)");
  }

  // The GPU reduces: it reads its own input where it is and the received segment from the pinned slot (mapped:
  // cudaHostAlloc memory is device-accessible under unified addressing), and writes the result to the slot the
  // ring sends from. The same bits as the host's reduction of the same operands in the same order.
  bool reducesWhereTheDataIs() const override { return reduceOnGpu_; }
  std::byte* receiveArea(std::size_t bytes) override { return pinned_(bytes); }
  std::size_t reduce(std::byte* dst, const std::byte* received, std::size_t offset, std::size_t count, DataType type,
                     ReduceKind kind, int avgDivisor) override {
    const void* srcs[2] = {send_ + offset, received};
    cuda::reduceSourcesOnDevice(dst, srcs, 2, count, type, kind, avgDivisor, stream_);
    return record();
  }

 private:
  // An event after the work queued so far: its ticket.
  std::size_t record() {
    if (fetches_ == events_.size()) {
      cudaEvent_t e = nullptr;
      cuda::checkCuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate(window in)");
      events_.push_back(e);
    }
    cuda::checkCuda(cudaEventRecord(events_[fetches_], stream_), "cudaEventRecord(window in)");
    return fetches_++;
  }

  const bool reduceOnGpu_;
  std::function<std::byte*(std::size_t)> pinned_;
  const std::byte* send_;
  std::byte* recv_;
  std::byte* slots_[2];
  std::size_t windowBytes_;
  std::vector<cudaEvent_t>& events_;
  cudaStream_t stream_;
  std::size_t fetches_ = 0;
};

StagingEngine::~StagingEngine() {
  for (int which = 0; which < 3; ++which) {
    host_.deregisterRegion(regions_[which]);
    if (buffers_[which] != nullptr) (void)cudaFreeHost(buffers_[which]);
  }
  for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
}

std::byte* StagingEngine::buffer(int which, std::size_t bytes) {
  if (capacity_[which] < bytes) {
    host_.deregisterRegion(regions_[which]);
    regions_[which] = nullptr;
    if (buffers_[which] != nullptr) (void)cudaFreeHost(buffers_[which]);
    buffers_[which] = nullptr;
    capacity_[which] = 0;
    void* p = nullptr;
    // Rounded up so that a sweep of growing sizes reallocates a few times, not every call.
    const std::size_t rounded = std::max<std::size_t>(std::bit_ceil(bytes), 1u << 20);
    cuda::checkCuda(cudaHostAlloc(&p, rounded, cudaHostAllocDefault), "cudaHostAlloc(staging buffer)");
    buffers_[which] = static_cast<std::byte*>(p);
    capacity_[which] = rounded;
    // Reused by every staged call: the network transport may move it without a copy (docs/NETWORK.md).
    regions_[which] = host_.registerRegion(p, rounded, transport::RegionMemory::kPinnedHost);
  }
  return buffers_[which];
}

std::string StagingEngine::allreduceAlgorithm(std::size_t bytes) const {
  return strCat("staged+", host_.allreduceAlgorithm(bytes));
}

std::string StagingEngine::explainAllreduce(std::size_t bytes) const {
  return strCat("device buffers staged through pinned host memory, then ", host_.explainAllreduce(bytes));
}

// The copies of a call staged whole, on the call's stream.
class StreamCopies final : public BufferCopies {
 public:
  StreamCopies(StagingEngine& engine, cudaStream_t stream) : engine_(engine), stream_(stream) {}

  std::byte* arena(std::size_t bytes) override { return engine_.buffer(0, bytes); }
  void fetch(std::byte* to, const void* from, std::size_t bytes) override {
    cuda::checkCuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync(staging in)");
  }
  void awaitFetched(const OpEnv&) override {
    cuda::checkCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(staging in)");
  }
  void deliver(void* to, const std::byte* from, std::size_t bytes) override {
    if (engine_.streamWrites_ && cuda::writeByStreamOps(to, from, bytes, stream_)) return;
    cuda::checkCuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync(staging out)");
  }
  void awaitDelivered(const OpEnv&) override {
    cuda::checkCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(staging out)");
  }

 private:
  StagingEngine& engine_;
  cudaStream_t stream_;
};

void StagingEngine::run(const CallArgs& call, const OpEnv& env) {
  // A rejected call reaches the peers at once: there is nothing to copy.
  if (call.collective == Collective::kRejected) return host_.run(call, env);
  refuseCapture(env);
  if (windowed(call, env)) return;
  StreamCopies copies(*this, streamOf(env));
  try {
    runOnCopies(host_, call, static_cast<int>(size_), copies, env);
  } catch (...) {
    // Copies may still be reading or writing the arena: they must end before it serves another call.
    (void)cudaStreamSynchronize(streamOf(env));
    throw;
  }
}

bool StagingEngine::windowed(const CallArgs& call, const OpEnv& env) {
  if (windowBytes_ == 0) return false;
  const Collective c = call.collective;
  if (c != Collective::kAllreduce && c != Collective::kAllgather && c != Collective::kReduceScatter) return false;
  std::byte* slots[2] = {buffer(0, windowBytes_), buffer(1, windowBytes_)};
  // Windows of a reduce_scatter reduce on the host: the GPU reduction of windows is the allreduce's only.
  WindowedCopies copies(call.send, call.recv, slots, windowBytes_, events_, streamOf(env),
                        reduceOnGpu_ && c == Collective::kAllreduce,
                        [this](std::size_t bytes) { return buffer(2, bytes); });
  try {
    if (!host_.runStaged(call, copies, env)) return false;
  } catch (...) {
    // Copies may still be reading or writing the slots: they must end before the slots serve another call.
    (void)cudaStreamSynchronize(streamOf(env));
    throw;
  }
  cuda::checkCuda(cudaStreamSynchronize(streamOf(env)), "cudaStreamSynchronize(window out)");
  return true;
}

}  // namespace braid::device
