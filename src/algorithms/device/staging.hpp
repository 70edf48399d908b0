// Device buffers through a host engine: the inputs are copied to pinned host memory, the host collective runs on
// the copies, and the results are copied back, all ordered on the call's stream. The path for device buffers where
// braid's kernels cannot run (no working P2P between the GPUs, ranks on other hosts, more ranks than a channel
// connects) and for the calls the kernels do not cover (allgatherv, alltoallv, point-to-point). The call returns
// when the results are in place: later work on the stream sees them.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "algorithms/device/device_engine_factory.hpp"
#include "algorithms/engine.hpp"

struct CUevent_st;

namespace braid::device {

/// A stream-ordered copy between host and device memory, waited for (the pinned staging buffer is reused).
void copyAndWait(void* dst, const void* src, std::size_t bytes, const OpEnv& env);

class StagingEngine final : public Engine {
 public:
  /// `windowBytes` (BRAID_NET_STAGING_WINDOW): allreduces the host engine pipelines (Engine::allreduceStaged)
  /// go through two pinned windows of this size; 0: every call copies its whole buffers.
  /// `reduceOnGpu` (BRAID_NET_STAGING_REDUCE=gpu): those windows are reduced by the GPU, not the host engine.
  StagingEngine(Engine& host, int size, std::size_t windowBytes, bool reduceOnGpu)
      : host_(host), size_(static_cast<std::size_t>(size)), windowBytes_(windowBytes), reduceOnGpu_(reduceOnGpu) {}
  ~StagingEngine() override;

  const char* transportName() const override { return host_.transportName(); }
  std::string allreduceAlgorithm(std::size_t bytes) const override;
  std::string explainAllreduce(std::size_t bytes) const override;

  void barrier(const OpEnv& env) override;
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                 const OpEnv& env) override;
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
              const OpEnv& env) override;
  void reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                     const OpEnv& env) override;
  void broadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env) override;
  void allgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) override;
  void allgatherv(const void* send, std::size_t sendCount, void* recv, const std::vector<std::size_t>& recvCounts,
                  const std::vector<std::size_t>& displs, DataType type, const OpEnv& env) override;
  void gather(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env) override;
  void scatter(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env) override;
  void alltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) override;
  void alltoallv(const void* send, const std::vector<std::size_t>& sendCounts,
                 const std::vector<std::size_t>& sendDispls, void* recv, const std::vector<std::size_t>& recvCounts,
                 const std::vector<std::size_t>& recvDispls, DataType type, const OpEnv& env) override;
  void pointToPoint(std::span<const P2pOp> ops, const OpEnv& env) override;
  void reject(const OpEnv& env) override { host_.reject(env); }
  void abort() override { host_.abort(); }
  std::string peerFailure(int peer) override { return host_.peerFailure(peer); }

  /// Small results go back to device memory by the stream's value writes (cuda/runtime/stream_writes.hpp), not by
  /// copies: for processes that share a GPU, where a small copy waits for the GPU to switch contexts.
  void useStreamWrites(bool on) { streamWrites_ = on; }

 private:
  /// A result from pinned host memory back into device memory `dst`, waited for.
  void copyBack(void* dst, const void* src, std::size_t bytes, const OpEnv& env);
  /// Pinned host buffer `which` (0: inputs, 1: outputs, 2: what a windowed call receives) of at least `bytes`.
  std::byte* buffer(int which, std::size_t bytes);
  /// Whether `run` (the host engine's allreduceStaged, allgatherStaged, ...) ran the call window by window through
  /// the two window slots (the same answer on every rank); waits for the last copies out.
  bool windowed(const void* send, void* recv, bool reduceOnGpu, const OpEnv& env,
                const std::function<bool(StagedBuffer&)>& run);

  Engine& host_;
  const std::size_t size_;
  const std::size_t windowBytes_;
  const bool reduceOnGpu_;
  bool streamWrites_ = false;
  std::vector<CUevent_st*> events_;  // one per fetch of a windowed call, reused by the next
  std::byte* buffers_[3] = {nullptr, nullptr, nullptr};
  std::size_t capacity_[3] = {0, 0, 0};
  const transport::Region* regions_[3] = {nullptr, nullptr, nullptr};  // the buffers as the host engine registered them
};

}  // namespace braid::device
