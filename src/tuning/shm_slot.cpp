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
// With helper threads a pass is cut into a piece per thread: the slot grows with them, so that each thread's piece
// stays what one thread's pass was, up to a bound on the memory a rank maps.
constexpr std::size_t kMaxBytesWithHelpers = std::size_t{8} << 20;

// Measured on the 2-core VM, 2 ranks, each build in turn (docs/BENCHMARKS.md, "Data-movement collectives in one
// copy"): below a quarter of a slot the extra round and the kernel's call cost more than the second copy saves (a
// 16 KiB allgather took twice as long); from 16 MiB blocks the kernel's copy, page by page with ordinary stores and
// a page pinned at a time, ran slower than the slots' two user-space copies, streamed and spread over both ranks'
// cores (a 64 MiB broadcast 1.5x the time through the slots).
constexpr std::size_t kSingleCopySlotFraction = 4;
constexpr std::size_t kSingleCopyMaxBlockBytes = std::size_t{8} << 20;

}  // namespace

ByteRange shmSingleCopyBlocks(std::size_t slotBytes) {
  const std::size_t min = std::max<std::size_t>(slotBytes / kSingleCopySlotFraction, 1);
  return {min, std::max(min, kSingleCopyMaxBlockBytes)};
}

std::size_t shmSlotBytes(int ranks, std::size_t configured, int threads) {
  if (configured > 0) return configured;
  const std::size_t byRanks = kBytesPerRank * static_cast<std::size_t>(std::max(ranks, 1));
  const std::size_t oneThread = std::clamp(byRanks, kMinBytes, kMaxBytes);
  return std::min(oneThread * static_cast<std::size_t>(std::max(threads, 1)),
                  std::max(oneThread, kMaxBytesWithHelpers));
}

}  // namespace braid::tuning
