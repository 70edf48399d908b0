#include "tuning/device_path.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "tuning/selector.hpp"

namespace braid::tuning {

namespace {

// Blocks per kernel: one per 16 KiB of a round's window, at least one, at most 128. A block keeps only so many
// stores to a peer in flight, ~5 GB/s over NVLink: on 2xH200 a bfloat16 one-shot allreduce of 8 MiB took 110 us
// on 16 blocks, 62 on 32 and 44 on 64 (docs/BENCHMARKS.md); 128 is also the most a kernel may have
// (kMaxCollectiveBlocks).
constexpr std::size_t kBytesPerBlock = 16 * 1024;
constexpr int kDefaultMaxBlocks = 128;

}  // namespace

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

int deviceBlocks(std::size_t windowBytes, int maxBlocks, const Settings& settings) {
  if (settings.cudaBlocks > 0) return static_cast<int>(std::min<long>(settings.cudaBlocks, maxBlocks));
  const std::size_t wanted = (windowBytes + kBytesPerBlock - 1) / kBytesPerBlock;
  return static_cast<int>(std::clamp<std::size_t>(wanted, 1, std::min(kDefaultMaxBlocks, maxBlocks)));
}

}  // namespace braid::tuning
