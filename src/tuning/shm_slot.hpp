// How many bytes each rank of a shared-memory group exposes per collective round: a choice every rank of the group
// makes alike from the rank count, so that their regions agree without a message.
#pragma once

#include <cstddef>

namespace braid::tuning {

/// BRAID_SHM_SLOT_BYTES where set (`configured` > 0); else 128 KiB for each of the `ranks`, at least 256 KiB and at
/// most 1 MiB, times the `threads` each rank runs its passes on (BRAID_SHM_THREADS), at most 8 MiB.
std::size_t shmSlotBytes(int ranks, std::size_t configured, int threads = 1);

/// The blocks, in bytes a rank reads from one peer, for which a data-movement collective over shared memory reads its
/// peers' buffers in place (host/single_copy.hpp) rather than through the slots: [min, max]. From the slot size, which
/// every rank of the group shares, so that all of a call's ranks decide alike.
struct ByteRange {
  std::size_t min = 0;
  std::size_t max = 0;
  bool holds(std::size_t bytes) const { return bytes >= min && bytes <= max; }
};
ByteRange shmSingleCopyBlocks(std::size_t slotBytes);

}  // namespace braid::tuning
