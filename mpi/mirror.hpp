// The braid communicator that serves GPU-buffer calls on an MPI communicator: made at the first such call (rank 0
// of the MPI communicator makes a braid::UniqueId and broadcasts it with PMPI), kept as an attribute of the MPI
// communicator, and destroyed when MPI frees the communicator, or at MPI_Finalize.
#pragma once

#include <mpi.h>

#include "braid/braid.hpp"

namespace braid::mpi {

/// The mirror of `comm`, made now when it has none (collective over `comm`, as the MPI call asking is).
Communicator& mirrorOf(MPI_Comm comm);

}  // namespace braid::mpi
