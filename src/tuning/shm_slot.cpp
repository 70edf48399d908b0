#include "tuning/shm_slot.hpp"

#include <algorithm>

namespace braid::tuning {

namespace {

// rsag reduces a slot's worth of a call per pair of rounds, each rank its block (slot / ranks) of it, and each round
// costs a wait for every peer. A slot that grows with the rank count keeps the block, and so the work between two
// waits, from shrinking as the waits multiply. Measured on the H100 machine's 16-core host (docs/BENCHMARKS.md,
// "Slot size by rank count" and the run after it): on one machine, against 256 KiB slots, 512 KiB took 4 ranks'
// 256 KiB-64 MiB calls 12% less time and 1 MiB took 8 ranks' 12% and 16 ranks' 15% less; on a second, the rule
// against 256 KiB in turn moved 4 and 8 ranks by less than the spread of two passes. At 2 ranks no size beat
// 256 KiB beyond that spread. Larger slots than 1 MiB would leave a core's L2 (2 MiB there) with both of a rank's
// slots.
constexpr std::size_t kBytesPerRank = std::size_t{128} << 10;
constexpr std::size_t kMinBytes = std::size_t{256} << 10;
constexpr std::size_t kMaxBytes = std::size_t{1} << 20;

}  // namespace

std::size_t shmSlotBytes(int ranks, std::size_t configured) {
  if (configured > 0) return configured;
  const std::size_t byRanks = kBytesPerRank * static_cast<std::size_t>(std::max(ranks, 1));
  return std::clamp(byRanks, kMinBytes, kMaxBytes);
}

}  // namespace braid::tuning
