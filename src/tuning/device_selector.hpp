// How a collective on device buffers runs: which allreduce kernel, and how many blocks a kernel gets. The numbers
// are a table (data), overridden by BRAID_ALGO and BRAID_CUDA_BLOCKS; choose* build no strings, explain* does.
#pragma once

#include <cstddef>
#include <string>

#include "base/config.hpp"

namespace braid::tuning {

enum class DeviceAlgorithm { kLL, kOneShot, kTwoShot, kStaged, kShared };

enum class DeviceReason { kForced, kNoChannel, kSharedGpu, kTable };

struct DeviceChoice {
  DeviceAlgorithm algorithm;
  DeviceReason reason;
};

/// The allreduce kernel for `bytes` over `ranks` GPUs (nvlink: every pair is joined by NVLink). `channel` is
/// false where the kernels cannot run (no working P2P): then staged, whatever was asked. `sharedGpu`: the ranks take
/// the shared-GPU path (chooseSharedGpuPath); `processes`: some of the ranks sharing a GPU are different processes,
/// whose small calls go faster staged through host memory (the table below). BRAID_ALGO overrides both.
DeviceChoice chooseDeviceAllreduce(std::size_t bytes, int ranks, bool nvlink, bool channel, const Settings& settings,
                                   bool sharedGpu = false, bool processes = false);
/// Whether every collective on device buffers takes the shared-GPU path (algorithms/device/shared_gpu.hpp).
/// `shared`: some ranks share a GPU; `mps`: an MPS server runs, so their kernels run side by side. BRAID_ALGO=shared:
/// always; BRAID_ALGO naming a kernel (ll, oneshot, twoshot): never; else BRAID_CUDA_SHARED_GPU decides (auto: when
/// shared and not under MPS). InvalidArgument names an unknown BRAID_CUDA_SHARED_GPU.
bool chooseSharedGpuPath(bool shared, bool mps, const Settings& settings);
const char* deviceAlgorithmName(DeviceAlgorithm algorithm);
std::string explainDeviceAllreduce(const DeviceChoice& choice, std::size_t bytes, int ranks, bool nvlink);

/// Blocks for a kernel whose rounds move `windowBytes` per rank (at most `maxBlocks`).
int deviceBlocks(std::size_t windowBytes, int maxBlocks, const Settings& settings);

}  // namespace braid::tuning
