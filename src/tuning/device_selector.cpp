#include "tuning/device_selector.hpp"

#include <algorithm>
#include <limits>

#include "base/error.hpp"
#include "tuning/selector.hpp"

namespace braid::tuning {

namespace {

// Largest allreduce the one-shot kernel takes; above it, two-shot. One-shot sends every byte to every peer and
// synchronises once; two-shot sends 2(n-1)/n of them and synchronises twice.
struct OneShotRow {
  int maxRanks;
  bool nvlink;
  std::size_t maxBytes;
};
constexpr OneShotRow kOneShot[] = {
    // Two ranks: both kernels move the same bytes over the link, one-shot with half the synchronisation and only
    // stores (the faster direction of NVLink traffic: 365 vs 337 GB/s), two-shot with less local reading and
    // summing. At 64 blocks two-shot won from 128 MiB on; at 128 blocks, where the link rather than the blocks'
    // stores in flight is the limit, one-shot wins everywhere: bfloat16 on 2xH200, 308 vs 293 GB/s at 128 MiB and
    // 331 vs 312 at 512 MiB (docs/BENCHMARKS.md).
    {2, true, std::numeric_limits<std::size_t>::max()},
    {2, false, std::numeric_limits<std::size_t>::max()},
    // More ranks: one-shot's (n-1)x traffic costs more than a second synchronisation from ~256 KiB (NVLink) and
    // ~64 KiB (PCIe) on; first estimates until braid tune measures them.
    {8, true, 256 * 1024},
    {8, false, 64 * 1024},
};

// Blocks per kernel: one per 16 KiB of a round's window, at least one, at most 128. A block keeps only so many
// stores to a peer in flight, ~5 GB/s over NVLink: on 2xH200 a bfloat16 one-shot allreduce of 8 MiB took 110 us
// on 16 blocks, 62 on 32 and 44 on 64 (docs/BENCHMARKS.md); 128 is also the most a kernel may have
// (kMaxCollectiveBlocks).
constexpr std::size_t kBytesPerBlock = 16 * 1024;
constexpr int kDefaultMaxBlocks = 128;

// The LL kernel (data and flag in one store: no fence, no flag round trip, but twice the bytes on the link).
// kLlMaxBytes: the largest it carries at all (cuda::kernels::kLlMaxBytes, the LL area's size), under BRAID_ALGO=ll;
// kLlTableBytes: the largest the table gives it. On 2xH200 (NVLink) LL took 2.9-4.3 us of GPU time per call up to
// 64 KiB where one-shot took 5.3-8.5, and 9.0 us at 512 KiB where one-shot took 10.2-11.3 (docs/BENCHMARKS.md);
// With more ranks a rank stores (n - 1) copies of twice its data: 64 KiB until measured. PCIe: unmeasured, the
// same bounds.
constexpr std::size_t kLlMaxBytes = 512 * 1024;
constexpr std::size_t llTableBytes(int ranks) { return ranks <= 2 ? 512 * 1024 : 64 * 1024; }

// Processes sharing a GPU without MPS: every kernel one of them launches after the other's work waits for the GPU's
// compute engine to switch contexts (~200 us on an H200), while copies of 32 KiB and more switch the copy engines
// at little cost. So up to 1 MiB an allreduce goes faster staged through host memory (two copies and a reduction on
// the CPU) than on the shared-GPU path (a copy and a kernel): 2 processes on one H200, staged 22-31 us at 32-64 KiB
// and ~80 us at 1 MiB, shared ~350 us at every size up to 16 MiB (docs/BENCHMARKS.md).
constexpr std::size_t kSharedGpuStagedMaxBytes = 1024 * 1024;

}  // namespace

DeviceChoice chooseDeviceAllreduce(std::size_t bytes, int ranks, bool nvlink, bool channel, const Settings& settings,
                                   bool sharedGpu, bool processes) {
  if (!channel) return {DeviceAlgorithm::kStaged, DeviceReason::kNoChannel};
  const std::string forced = forcedAlgorithm(settings, Path::kDevice);
  if (forced == "ll" && bytes <= kLlMaxBytes) return {DeviceAlgorithm::kLL, DeviceReason::kForced};
  if (forced == "oneshot" || forced == "ll") return {DeviceAlgorithm::kOneShot, DeviceReason::kForced};
  if (forced == "twoshot") return {DeviceAlgorithm::kTwoShot, DeviceReason::kForced};
  if (forced == "staged") return {DeviceAlgorithm::kStaged, DeviceReason::kForced};
  if (forced == "shared") return {DeviceAlgorithm::kShared, DeviceReason::kForced};
  if (sharedGpu && processes && bytes <= kSharedGpuStagedMaxBytes) {
    return {DeviceAlgorithm::kStaged, DeviceReason::kSharedGpu};
  }
  if (sharedGpu) return {DeviceAlgorithm::kShared, DeviceReason::kSharedGpu};
  // BRAID_CUDA_LL_MAX_BYTES / BRAID_CUDA_ONESHOT_MAX_BYTES (braid tune writes them) replace the table's bounds.
  const std::size_t llMax =
      settings.cudaLlMaxBytes != 0 ? std::min(settings.cudaLlMaxBytes, kLlMaxBytes) : llTableBytes(ranks);
  if (bytes <= llMax) return {DeviceAlgorithm::kLL, DeviceReason::kTable};
  if (settings.cudaOneshotMaxBytes != 0) {
    return {bytes <= settings.cudaOneshotMaxBytes ? DeviceAlgorithm::kOneShot : DeviceAlgorithm::kTwoShot,
            DeviceReason::kTable};
  }
  for (const OneShotRow& row : kOneShot) {
    if (ranks <= row.maxRanks && nvlink == row.nvlink) {
      return {bytes <= row.maxBytes ? DeviceAlgorithm::kOneShot : DeviceAlgorithm::kTwoShot, DeviceReason::kTable};
    }
  }
  return {DeviceAlgorithm::kTwoShot, DeviceReason::kTable};
}

bool chooseSharedGpuPath(bool shared, bool mps, const Settings& settings) {
  const std::string& mode = settings.cudaSharedGpu;
  if (mode != "auto" && mode != "shared" && mode != "kernels" && !mode.empty()) {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_CUDA_SHARED_GPU='", mode, "' is not one of auto, shared, kernels");
  }
  const std::string forced = forcedAlgorithm(settings, Path::kDevice);
  if (forced == "shared") return true;
  if (forced == "ll" || forced == "oneshot" || forced == "twoshot") return false;
  if (mode == "kernels") return false;
  return shared && (mode == "shared" || !mps);
}

const char* deviceAlgorithmName(DeviceAlgorithm algorithm) {
  switch (algorithm) {
    case DeviceAlgorithm::kLL:
      return "ll";
    case DeviceAlgorithm::kOneShot:
      return "oneshot";
    case DeviceAlgorithm::kTwoShot:
      return "twoshot";
    case DeviceAlgorithm::kShared:
      return "shared";
    case DeviceAlgorithm::kStaged:
      return "staged";
  }
  return "?";
}

std::string explainDeviceAllreduce(const DeviceChoice& choice, std::size_t bytes, int ranks, bool nvlink) {
  const char* link = nvlink ? "NVLink" : "PCIe";
  switch (choice.reason) {
    case DeviceReason::kForced:
      return strCat(deviceAlgorithmName(choice.algorithm), ": forced by BRAID_ALGO");
    case DeviceReason::kNoChannel:
      return "staged: the GPUs cannot reach each other's memory (see the log line of the P2P probe)";
    case DeviceReason::kSharedGpu:
      if (choice.algorithm == DeviceAlgorithm::kStaged) {
        return strCat("staged: processes share a GPU (no MPS): up to ", kSharedGpuStagedMaxBytes,
                      " B the copies to and from host memory cost less than the context switch each kernel of the "
                      "shared-GPU path waits for");
      }
      return "shared: ranks share a GPU, whose kernels take turns in time slices (no MPS): the shared-GPU path, on "
             "which no kernel waits for another rank's";
    case DeviceReason::kTable:
      break;
  }
  if (choice.algorithm == DeviceAlgorithm::kLL) {
    return strCat("ll: ", bytes, " B <= ", llTableBytes(ranks),
                  " B: latency-bound; data and flag travel in one store, with no fence and no flag to wait for");
  }
  if (choice.algorithm == DeviceAlgorithm::kOneShot) {
    return ranks <= 2 ? strCat("oneshot: 2 GPUs over ", link,
                               ": one-shot moves the same bytes as two-shot with one "
                               "synchronisation instead of two")
                      : strCat("oneshot: ", bytes, " B over ", ranks, " GPUs (", link, ") is latency-bound");
  }
  if (ranks <= 2) {
    return strCat("twoshot: ", bytes, " B over 2 GPUs (", link, "): each GPU reads and reduces half the data");
  }
  return strCat("twoshot: ", bytes, " B over ", ranks, " GPUs (", link, "): each GPU reduces 1/", ranks,
                " and sends 2(n-1)/n of the data instead of n-1 times it");
}

int deviceBlocks(std::size_t windowBytes, int maxBlocks, const Settings& settings) {
  if (settings.cudaBlocks > 0) return static_cast<int>(std::min<long>(settings.cudaBlocks, maxBlocks));
  const std::size_t wanted = (windowBytes + kBytesPerBlock - 1) / kBytesPerBlock;
  return static_cast<int>(std::clamp<std::size_t>(wanted, 1, std::min(kDefaultMaxBlocks, maxBlocks)));
}

}  // namespace braid::tuning
