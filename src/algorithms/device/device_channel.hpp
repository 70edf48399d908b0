// The channel the collective kernels talk through: one workspace per rank (cuMem memory exported as a POSIX fd, or
// where that is unavailable cudaMalloc memory shared through a cudaIpc handle), every peer's workspace mapped into
// this process, pinned host words the kernels report failures in, and a probe that proves each mapping really
// carries stores before any collective trusts it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/device/device_algorithms.hpp"
#include "algorithms/engine.hpp"
#include "cuda/kernels/collective_kernels.hpp"
#include "cuda/runtime/ipc_allocation.hpp"
#include "cuda/runtime/vmm_allocation.hpp"

namespace braid::device {

/// Host-mapped pinned words shared with the kernels.
struct ChannelControl {
  std::uint32_t abortFlag;
  std::uint32_t pad;
  cuda::kernels::KernelError error;
};

/// How a rank's workspace is shared (BRAID_CUDA_MEMORY): kAuto tries cuMem first and falls back to cudaIpc.
enum class WorkspaceMemory { kAuto, kVmm, kIpc };

class DeviceChannel {
 public:
  /// Collective over `host`: every rank of the communicator calls it within the same call, with its device bound
  /// (`device`). Returns the channel, or null on every rank alike when any rank cannot use one, with the reason
  /// in `why` ("rank 1: no P2P between GPU 0 and GPU 1", ...).
  static std::unique_ptr<DeviceChannel> connect(Engine& host, int rank, int size, int device, std::size_t slotBytes,
                                                WorkspaceMemory memory, const OpEnv& env, std::string* why);
  ~DeviceChannel();
  DeviceChannel(const DeviceChannel&) = delete;
  DeviceChannel& operator=(const DeviceChannel&) = delete;

  /// The kernels' view (timeoutNs is filled in per call).
  const cuda::kernels::Channel& channel() const { return channel_; }
  int device() const { return device_; }
  std::size_t slotBytes() const { return channel_.slotBytes; }
  /// What joins the ranks' GPUs: NVLink between every pair (else PCIe or the same GPU), its generation, the GPUs.
  const GpuLinks& links() const { return links_; }
  bool nvlink() const { return links_.nvlink; }
  /// Which ranks share a GPU (by UUID), e.g. "ranks 0, 2 share GPU 0; ranks 1, 3 share GPU 1"; empty when every
  /// rank has a GPU of its own.
  const std::string& sharing() const { return sharing_; }
  /// Whether two ranks of different processes share a GPU (their work is time-sliced there without MPS).
  bool processesShareGpu() const { return processesShare_; }
  /// Whether every rank is a thread of this process on this GPU: one CUDA context holds all their buffers, streams
  /// and events.
  bool oneContext() const { return oneContext_; }
  /// Whether every rank is a process of its own and all of them use this GPU.
  bool processesOnOneGpu() const { return processesOnOneGpu_; }
  /// How this rank's workspace is shared: "cuMem" or "cudaIpc".
  const char* memoryName() const { return ownIpc_.data() != nullptr ? "cudaIpc" : "cuMem"; }
  /// What the kernels reported; code 0 while nothing failed. Read without synchronising.
  cuda::kernels::KernelError lastError() const;
  /// Makes every wait of this channel's kernels give up (they record kAborted). Any thread, never blocks.
  void raiseAbort();

 private:
  DeviceChannel() = default;

  int device_ = -1;
  GpuLinks links_;
  std::string sharing_;
  bool processesShare_ = false;
  bool oneContext_ = false;
  bool processesOnOneGpu_ = false;
  cuda::VmmAllocation own_;                 // the workspace, when shared through cuMem
  cuda::IpcAllocation ownIpc_;              // or through cudaIpc
  std::vector<cuda::VmmAllocation> peers_;  // the peers' cuMem workspaces, mapped here
  std::vector<cuda::IpcMapping> peerIpc_;   // the peers' cudaIpc workspaces, opened here (other processes)
  ChannelControl* control_ = nullptr;
  cuda::kernels::Channel channel_{};
};

}  // namespace braid::device
