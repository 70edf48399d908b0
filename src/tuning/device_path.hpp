// Two choices of the device engine that are not between algorithms (their allreduce algorithms describe themselves,
// algorithms/device/device_algorithms.hpp, and a Selector weighs them): whether ranks that share a GPU take the
// shared-GPU path, and how many blocks a kernel gets.
#pragma once

#include <cstddef>

#include "base/config.hpp"

namespace braid::tuning {

/// Whether every collective on device buffers takes the shared-GPU path (algorithms/device/shared_gpu.hpp).
/// `shared`: some ranks share a GPU; `mps`: an MPS server runs, so their kernels run side by side. BRAID_ALGO=shared:
/// always; BRAID_ALGO naming a kernel (ll, oneshot, twoshot): never; else BRAID_CUDA_SHARED_GPU decides (auto: when
/// shared and not under MPS). InvalidArgument names an unknown BRAID_CUDA_SHARED_GPU.
bool chooseSharedGpuPath(bool shared, bool mps, const Settings& settings);

/// Blocks for a kernel whose rounds move `windowBytes` per rank (at most `maxBlocks`).
int deviceBlocks(std::size_t windowBytes, int maxBlocks, const Settings& settings);

}  // namespace braid::tuning
