// How many bytes each rank of a shared-memory group exposes per collective round: a choice every rank of the group
// makes alike from the rank count, so that their regions agree without a message.
#pragma once

#include <cstddef>

namespace braid::tuning {

/// BRAID_SHM_SLOT_BYTES where set (`configured` > 0); else 128 KiB for each of the `ranks`, at least 256 KiB and at
/// most 1 MiB, times the `threads` each rank runs its passes on (BRAID_SHM_THREADS), at most 8 MiB.
std::size_t shmSlotBytes(int ranks, std::size_t configured, int threads = 1);

}  // namespace braid::tuning
