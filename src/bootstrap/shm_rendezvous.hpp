// Builds the shared-memory group of a communicator through its store: each rank creates its region, publishes
// where it is, maps every peer's, and removes its name once all have mapped it (so a killed job leaves nothing
// in /dev/shm).
#pragma once

#include <memory>

#include "bootstrap/store.hpp"
#include "transport/shm/shm_local_group.hpp"

namespace braid::bootstrap {

/// All ranks must be on one host (same boot id); Unavailable otherwise, naming two ranks on different hosts.
std::unique_ptr<transport::ShmLocalGroup> joinShmGroup(Store& store, int rank, int size, std::size_t regionBytes,
                                                       Deadline deadline);

/// This machine's boot id: ranks that share it and /dev/shm share a host.
std::string bootId();

}  // namespace braid::bootstrap
