// Collectives on device buffers between the GPUs of one host: braid's kernels over a DeviceChannel (cuda_ipc),
// queued on the call's stream without waiting for them; the staging engine (through the host engine) where the
// kernels cannot run or do not cover a call. The channel is connected by the first call on device buffers, which
// every rank makes (collectives are called in the same order everywhere), on the device current at that call.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "algorithms/device/buffer_registry.hpp"
#include "algorithms/device/device_channel.hpp"
#include "algorithms/device/kernel_timeline.hpp"
#include "algorithms/device/leader.hpp"
#include "algorithms/device/one_context.hpp"
#include "algorithms/device/shared_gpu.hpp"
#include "algorithms/device/staging.hpp"
#include "algorithms/engine.hpp"
#include "base/config.hpp"
#include "cuda/kernels/collective_kernels.hpp"

namespace braid::device {

class DeviceEngine final : public Engine {
 public:
  /// `host` carries the connection's setup and the staged calls; it outlives this engine. `device`: the GPU every
  /// call runs on (-1: the one current at the first call). `kernels`: false when the ranks span several hosts
  /// (every call is staged through `host` then).
  DeviceEngine(Engine& host, int rank, int size, const Settings& settings, DevicePolicy policy, int device,
               bool kernels);
  ~DeviceEngine() override;
  /// This rank's GPU is shared with ranks of other hosts (one machine split by BRAID_HOST_ID or network
  /// namespaces): a small copy back into device memory would wait for the GPU to switch contexts.
  void shareGpuAcrossHosts();

  const char* transportName() const override;
  std::string allreduceAlgorithm(std::size_t bytes) const override;
  std::string explainAllreduce(std::size_t bytes) const override;

  /// braid's kernels for the collectives they cover, once the channel is connected; the shared-GPU path where the
  /// ranks share a GPU; else, and for per-rank counts and point-to-point, the staging engine.
  void run(const CallArgs& call, const OpEnv& env) override;
  std::uint64_t registerBuffer(void* ptr, std::size_t bytes, const OpEnv& env) override;
  void deregisterBuffer(std::uint64_t id, const OpEnv& env) override;
  void abort() override;
  std::string peerFailure(int peer) override { return host_.peerFailure(peer); }

  std::optional<bool> holdsCaller(const char* op, std::size_t bytes) const override;

  /// The failure a kernel of this communicator recorded (ncclCommGetAsyncError), if any. Any thread.
  std::optional<Error> asyncError(const CallContext& ctx) const;
  /// How many calls so far read their peers' registered buffers in place (the kernels count them). Waits for
  /// nothing: the caller synchronises with the calls it wants counted.
  std::uint64_t registeredCalls() const;
  /// How many calls so far read their peers' buffers in place on the shared-GPU path of threads of one process
  /// (every call there does, registered or not).
  std::uint64_t oneContextCalls() const { return shared_ ? shared_->inPlaceCalls() : 0; }
  /// The path ranks that share a GPU take (CoLocatedCollectives::name), or "" where there is none.
  std::string coLocatedPath() const { return shared_ && sharedPath_ ? shared_->name() : ""; }
  /// The device the communicator bound at its first device call (-1 before).
  int device() const { return device_; }

 private:
  /// Connects the channel at the first call and checks for an earlier kernel failure; false: stage this call.
  bool kernelsReady(const OpEnv& env);
  /// Whether every rank chose the shared-GPU path (DevicePolicy::sharedPath): collective, at the connection.
  bool agreeOnSharedPath(const OpEnv& env);
  /// Whether this call takes the shared-GPU path; if so, orders it after this communicator's previous call and
  /// notes its stream. A call being captured into a CUDA graph is refused there (its host waits cannot be captured).
  bool onSharedPath(const OpEnv& env);
  /// Makes a call on another stream than the previous one wait for it (one communicator's calls run in order).
  void followPrevious(const OpEnv& env);
  /// The calls braid's kernels run: an allreduce by the algorithm the policy chooses (or staged, or on the shared-GPU
  /// path), a reduce or reduce_scatter, and the collectives that move data.
  void runAllreduce(const CallArgs& c, const OpEnv& env);
  void launchReducing(const CallArgs& c, cuda::kernels::DeviceOp dop, const OpEnv& env);
  void launchMoving(const CallArgs& c, const OpEnv& env);
  /// Fills in the channel, the rounds and the grid, orders the call after this communicator's previous one, and
  /// launches `kernel` on the call's stream.
  void launch(cuda::kernels::CollectiveParams params, const void* kernel, std::size_t unitBytes, const OpEnv& env,
              const char* algorithm);
  /// The LL allreduce: one round, a thread per 8-byte line.
  void launchLL(cuda::kernels::CollectiveParams params, const void* kernel, std::size_t unitBytes, const OpEnv& env);
  /// Orders the call after this communicator's previous one and launches it on the call's stream.
  void enqueue(const cuda::kernels::CollectiveParams& params, const void* kernel, int blocks, std::size_t windowBytes,
               const OpEnv& env, const char* algorithm);
  /// Scales `count` elements of src by op's pre-multiplier into device scratch memory (or dst when given); returns
  /// where the scaled copy is.
  /// Marks `p` to read peers' registered buffers in place when this call may (registrations exist, the size is
  /// at least BRAID_CUDA_REGISTERED_MIN_BYTES): peers read `sendBytes` of each rank's send and `recvBytes` of its
  /// recv buffer. The same choice on every rank; the kernel falls back to the inboxes unless every rank's
  /// buffers are registered.
  void readInPlaceIfRegistered(cuda::kernels::CollectiveParams& p, std::size_t bytes, std::size_t sendBytes,
                               std::size_t recvBytes) const;
  const void* premultiplied(const void* src, void* dst, std::size_t count, DataType type, ReduceOp op,
                            const OpEnv& env);
  void watch();
  /// Whether the policy should stage small allreduces through host memory: processes share a GPU and the path
  /// they share it by makes the GPU switch contexts.
  bool stagesSmallCalls() const {
    return channel_ && channel_->processesShareGpu() && (!shared_ || shared_->smallCallsFasterStaged());
  }
  /// What decides which allreduce algorithms can run (DevicePolicy::allreduce), as far as the engine knows yet.
  DeviceFacts facts() const {
    return {.channel = channel_ != nullptr, .shared = sharedPath_, .processes = stagesSmallCalls()};
  }
  /// What joins the ranks' GPUs, once the channel connected; unknown (zeros) before.
  GpuLinks links() const { return channel_ ? channel_->links() : GpuLinks{}; }

  Engine& host_;
  StagingEngine staging_;
  const int rank_;
  const int size_;
  const Settings settings_;
  const DevicePolicy policy_;
  int device_ = -1;
  bool tried_ = false;
  std::string noChannelWhy_;
  std::unique_ptr<DeviceChannel> channel_;            // made and used by the thread running calls
  std::atomic<DeviceChannel*> channelView_{nullptr};  // the same, for abort() and asyncError() from any thread

  std::unique_ptr<CoLocatedCollectives> shared_;  // with the channel
  bool sharedPath_ = false;                       // every call takes it (DevicePolicy::sharedPath)

  std::unique_ptr<KernelTimeline> timeline_;  // BRAID_CUDA_TIMELINE=1 only
  CUstream_st* lastStream_ = nullptr;
  bool haveLast_ = false;
  cudaEvent_t join_ = nullptr;
  // The driver's handle of each kernel launched so far: cuLaunchKernel with it skips the runtime's lookup of the
  // kernel by address, a good part of a small collective's host time.
  std::unordered_map<const void*, cudaFunction_t> functions_;
  void* scratch_ = nullptr;
  std::size_t scratchBytes_ = 0;
  std::set<std::string> logged_;
  BufferRegistry registry_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool aborted_ = false;
  std::string lostWhy_;  // why the watchdog raised the abort flag
  int lostPeer_ = -1;    // the peer it named
  std::thread watchdog_;
};

}  // namespace braid::device
