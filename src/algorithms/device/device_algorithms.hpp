// The allreduce algorithms of GPU buffers, described for the selector (tuning/algorithm.hpp): braid's kernels (LL,
// one-shot, two-shot) where every GPU reaches every other, staging through host memory, and the path of ranks that
// share a GPU. Which of them can run depends on what the engine found when it connected (DeviceFacts); among those
// the selector chooses by size. Plain data, built without CUDA too, so that braid explain can describe GPU machines
// from any build.
#pragma once

#include <compare>
#include <vector>

#include "base/config.hpp"
#include "tuning/algorithm.hpp"

namespace braid::device {

/// What decides which allreduce algorithms can run, as the engine knows it.
struct DeviceFacts {
  bool channel = false;    ///< braid's kernels can run: every GPU maps every other's memory (P2P)
  bool shared = false;     ///< the ranks take the shared-GPU path (they share a GPU without MPS)
  bool processes = false;  ///< on that path, some of the ranks sharing a GPU are different processes
};

/// What joins the ranks' GPUs, as the engine found when it connected: the kind of link, its generation (the lowest
/// among the ranks' GPUs), and how many GPUs the ranks use. Zeros before it connects: unknown.
struct GpuLinks {
  bool nvlink = false;  ///< every pair of GPUs is joined by NVLink (else PCIe, or one GPU)
  int generation = 0;   ///< of that link: NVLink's from the GPUs' architecture, PCIe's as the link runs now
  int gpus = 0;         ///< distinct GPUs among the ranks
  auto operator<=>(const GpuLinks&) const = default;
};

/// The candidates for `facts`, smallest-message first, with the bounds `braid tune` measured for the kernels
/// (BRAID_CUDA_LL_MAX_BYTES, BRAID_CUDA_ONESHOT_MAX_BYTES in `settings`) narrowing their byte ranges. Staging is
/// always among them (BRAID_ALGO=staged), unmodelled: it runs where nothing else can.
std::vector<tuning::AlgorithmDescriptor> allreduceAlgorithms(const DeviceFacts& facts, const Settings& settings);

}  // namespace braid::device
