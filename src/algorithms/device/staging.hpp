// Device buffers through a host engine: the inputs are copied to pinned host memory, the host collective runs on
// the copies, and the results are copied back, all ordered on the call's stream. The path for device buffers where
// braid's kernels cannot run (no working P2P between the GPUs, ranks on other hosts, more ranks than a channel
// connects) and for the calls the kernels do not cover (allgatherv, alltoallv, point-to-point). The call returns
// when the results are in place: later work on the stream sees them.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/device/device_engine_factory.hpp"
#include "algorithms/engine.hpp"

struct CUevent_st;

namespace braid::device {

class StagingEngine final : public Engine {
 public:
  /// `windowBytes` (BRAID_NET_STAGING_WINDOW): calls the host engine pipelines (Collectives::runStaged)
  /// go through two pinned windows of this size; 0: every call copies its whole buffers.
  /// `reduceOnGpu` (BRAID_NET_STAGING_REDUCE=gpu): those windows are reduced by the GPU, not the host engine.
  StagingEngine(Engine& host, int size, std::size_t windowBytes, bool reduceOnGpu)
      : host_(host), size_(static_cast<std::size_t>(size)), windowBytes_(windowBytes), reduceOnGpu_(reduceOnGpu) {}
  ~StagingEngine() override;

  const char* transportName() const override { return host_.transportName(); }
  std::string allreduceAlgorithm(std::size_t bytes) const override;
  std::string explainAllreduce(std::size_t bytes) const override;

  /// Any call, on pinned host copies of its buffers (copied_call.hpp), the copies ordered on the call's stream;
  /// allreduces, allgathers and reduce_scatters the host engine pipelines go window by window instead.
  void run(const CallArgs& call, const OpEnv& env) override;
  void abort() override { host_.abort(); }
  std::string peerFailure(int peer) override { return host_.peerFailure(peer); }

  /// Small results go back to device memory by the stream's value writes (cuda/runtime/stream_writes.hpp), not by
  /// copies: for processes that share a GPU, where a small copy waits for the GPU to switch contexts.
  void useStreamWrites(bool on) { streamWrites_ = on; }

 private:
  friend class StreamCopies;
  /// Pinned host buffer `which` (0: a call's arena or window slot 0, 1: window slot 1, 2: what a windowed call
  /// receives) of at least `bytes`.
  std::byte* buffer(int which, std::size_t bytes);
  /// Whether the host engine ran `call` window by window through the two window slots (Collectives::runStaged; the
  /// same answer on every rank); waits for the last copies out.
  bool windowed(const CallArgs& call, const OpEnv& env);

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
