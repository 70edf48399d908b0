#include "algorithms/device/staging.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <functional>

#include "algorithms/device/call_stream.hpp"
#include "algorithms/device/event_wait.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_reduce.hpp"
#include "cuda/runtime/stream_writes.hpp"

namespace braid::device {

namespace {

std::size_t extentBytes(const std::vector<std::size_t>& counts, const std::vector<std::size_t>& displs, DataType type) {
  std::size_t end = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) end = std::max(end, displs[i] + counts[i]);
  }
  return end * dataTypeSize(type);
}

}  // namespace

void copyAndWait(void* dst, const void* src, std::size_t bytes, const OpEnv& env) {
  if (bytes == 0) return;
  cuda::checkCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, streamOf(env)), "cudaMemcpyAsync(staging)");
  cuda::checkCuda(cudaStreamSynchronize(streamOf(env)), "cudaStreamSynchronize(staging)");
}

void StagingEngine::copyBack(void* dst, const void* src, std::size_t bytes, const OpEnv& env) {
  if (streamWrites_ && cuda::writeByStreamOps(dst, src, bytes, streamOf(env))) {
    cuda::checkCuda(cudaStreamSynchronize(streamOf(env)), "cudaStreamSynchronize(staging)");
    return;
  }
  copyAndWait(dst, src, bytes, env);
}

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

void StagingEngine::barrier(const OpEnv& env) {
  refuseCapture(env);
  waitForStream(env);
  host_.barrier(env);
}

// The pattern of every collective: inputs in, host collective, outputs out. In place stays in place: when send
// and recv are the same device buffer, so are their host copies.
bool StagingEngine::windowed(const void* send, void* recv, bool reduceOnGpu, const OpEnv& env,
                             const std::function<bool(StagedBuffer&)>& run) {
  if (windowBytes_ == 0) return false;
  std::byte* slots[2] = {buffer(0, windowBytes_), buffer(1, windowBytes_)};
  WindowedCopies copies(send, recv, slots, windowBytes_, events_, streamOf(env), reduceOnGpu,
                        [this](std::size_t bytes) { return buffer(2, bytes); });
  try {
    if (!run(copies)) return false;
  } catch (...) {
    // Copies may still be reading or writing the slots: they must end before the slots serve another call.
    (void)cudaStreamSynchronize(streamOf(env));
    throw;
  }
  cuda::checkCuda(cudaStreamSynchronize(streamOf(env)), "cudaStreamSynchronize(window out)");
  return true;
}

void StagingEngine::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                              const OpEnv& env) {
  refuseCapture(env);
  if (windowed(send, recv, reduceOnGpu_, env,
               [&](StagedBuffer& copies) { return host_.allreduceStaged(copies, count, type, op, env); })) {
    return;
  }
  const std::size_t bytes = count * dataTypeSize(type);
  std::byte* in = buffer(0, bytes);
  std::byte* out = send == recv ? in : buffer(1, bytes);
  copyAndWait(in, send, bytes, env);
  host_.allreduce(in, out, count, type, op, env);
  copyBack(recv, out, bytes, env);
}

void StagingEngine::reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                           const OpEnv& env) {
  refuseCapture(env);
  // recv is significant at the root only: elsewhere it may be anything, and nothing is written there.
  const bool isRoot = env.context.rank == root;
  const std::size_t bytes = count * dataTypeSize(type);
  std::byte* in = buffer(0, bytes);
  std::byte* out = !isRoot ? nullptr : send == recv ? in : buffer(1, bytes);
  copyAndWait(in, send, bytes, env);
  host_.reduce(in, out, count, type, op, root, env);
  if (isRoot) copyBack(recv, out, bytes, env);
}

void StagingEngine::reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                                  const OpEnv& env) {
  refuseCapture(env);
  // Windows reduce on the host: the GPU reduction of windows is the allreduce's only.
  if (windowed(send, recv, false, env,
               [&](StagedBuffer& copies) { return host_.reduceScatterStaged(copies, recvCount, type, op, env); })) {
    return;
  }
  const std::size_t bytes = recvCount * dataTypeSize(type);
  // send holds one block per rank; in place means recv is this rank's block of send.
  std::byte* in = buffer(0, bytes * size_);
  const std::ptrdiff_t offset = static_cast<const std::byte*>(recv) - static_cast<const std::byte*>(send);
  const bool inPlace = offset >= 0 && static_cast<std::size_t>(offset) < bytes * size_;
  std::byte* out = inPlace ? in + offset : buffer(1, bytes);
  copyAndWait(in, send, bytes * size_, env);
  host_.reduceScatter(in, out, recvCount, type, op, env);
  copyBack(recv, out, bytes, env);
}

void StagingEngine::broadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env) {
  refuseCapture(env);
  const std::size_t bytes = count * dataTypeSize(type);
  std::byte* b = buffer(0, bytes);
  if (env.context.rank == root) copyAndWait(b, buf, bytes, env);
  host_.broadcast(b, count, type, root, env);
  if (env.context.rank != root) copyBack(buf, b, bytes, env);
}

void StagingEngine::allgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) {
  refuseCapture(env);
  if (windowed(send, recv, false, env,
               [&](StagedBuffer& copies) { return host_.allgatherStaged(copies, count, type, env); })) {
    return;
  }
  const std::size_t bytes = count * dataTypeSize(type);
  const std::size_t total = bytes * size_;
  std::byte* out = buffer(1, total);
  const std::byte* mine = out + bytes * static_cast<std::size_t>(env.context.rank);
  const bool inPlace = send == static_cast<const std::byte*>(recv) + (mine - out);
  std::byte* in = inPlace ? const_cast<std::byte*>(mine) : buffer(0, bytes);
  copyAndWait(in, send, bytes, env);
  host_.allgather(in, out, count, type, env);
  copyBack(recv, out, total, env);
}

void StagingEngine::allgatherv(const void* send, std::size_t sendCount, void* recv,
                               const std::vector<std::size_t>& recvCounts, const std::vector<std::size_t>& displs,
                               DataType type, const OpEnv& env) {
  refuseCapture(env);
  const std::size_t bytes = sendCount * dataTypeSize(type);
  const std::size_t total = extentBytes(recvCounts, displs, type);
  std::byte* in = buffer(0, bytes);
  std::byte* out = buffer(1, total);
  copyAndWait(in, send, bytes, env);
  copyAndWait(out, recv, total, env);  // elements outside every block stay as they were
  host_.allgatherv(in, sendCount, out, recvCounts, displs, type, env);
  copyBack(recv, out, total, env);
}

void StagingEngine::gather(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env) {
  refuseCapture(env);
  const std::size_t bytes = count * dataTypeSize(type);
  const std::size_t total = bytes * size_;
  const bool isRoot = env.context.rank == root;
  std::byte* in = buffer(0, bytes);
  std::byte* out = isRoot ? buffer(1, total) : nullptr;
  copyAndWait(in, send, bytes, env);
  host_.gather(in, out, count, type, root, env);
  if (isRoot) copyBack(recv, out, total, env);
}

void StagingEngine::scatter(const void* send, void* recv, std::size_t count, DataType type, int root,
                            const OpEnv& env) {
  refuseCapture(env);
  const std::size_t bytes = count * dataTypeSize(type);
  const std::size_t total = bytes * size_;
  const bool isRoot = env.context.rank == root;
  std::byte* in = isRoot ? buffer(0, total) : nullptr;
  std::byte* out = buffer(1, bytes);
  if (isRoot) copyAndWait(in, send, total, env);
  host_.scatter(in, out, count, type, root, env);
  copyBack(recv, out, bytes, env);
}

void StagingEngine::alltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) {
  refuseCapture(env);
  const std::size_t total = count * dataTypeSize(type) * size_;
  std::byte* in = buffer(0, total);
  std::byte* out = send == recv ? in : buffer(1, total);
  copyAndWait(in, send, total, env);
  host_.alltoall(in, out, count, type, env);
  copyBack(recv, out, total, env);
}

void StagingEngine::alltoallv(const void* send, const std::vector<std::size_t>& sendCounts,
                              const std::vector<std::size_t>& sendDispls, void* recv,
                              const std::vector<std::size_t>& recvCounts, const std::vector<std::size_t>& recvDispls,
                              DataType type, const OpEnv& env) {
  refuseCapture(env);
  const std::size_t inBytes = extentBytes(sendCounts, sendDispls, type);
  const std::size_t outBytes = extentBytes(recvCounts, recvDispls, type);
  std::byte* in = buffer(0, inBytes);
  std::byte* out = buffer(1, outBytes);
  copyAndWait(in, send, inBytes, env);
  copyAndWait(out, recv, outBytes, env);
  host_.alltoallv(in, sendCounts, sendDispls, out, recvCounts, recvDispls, type, env);
  copyBack(recv, out, outBytes, env);
}

void StagingEngine::pointToPoint(std::span<const P2pOp> ops, const OpEnv& env) {
  refuseCapture(env);
  // One host copy per operation, laid out back to back in one staging buffer.
  std::vector<std::size_t> offsets(ops.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    offsets[i] = total;
    total += (ops[i].count * dataTypeSize(ops[i].type) + 15) / 16 * 16;
  }
  std::byte* staging = buffer(0, total);
  std::vector<P2pOp> staged(ops.begin(), ops.end());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    staged[i].buffer = staging + offsets[i];
    if (ops[i].kind == P2pOp::Kind::kSend) {
      copyAndWait(staged[i].buffer, ops[i].buffer, ops[i].count * dataTypeSize(ops[i].type), env);
    }
  }
  // The copies out follow the whole group: operations that joined it would be reported done before them.
  OpEnv unfed = env;
  unfed.feed = nullptr;
  host_.pointToPoint(staged, unfed);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == P2pOp::Kind::kRecv) {
      copyBack(ops[i].buffer, staged[i].buffer, ops[i].count * dataTypeSize(ops[i].type), env);
    }
  }
}

}  // namespace braid::device
