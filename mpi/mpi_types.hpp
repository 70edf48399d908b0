// How the MPI interposer maps an MPI call onto braid: predefined datatypes and reduction operations that braid's
// kernels run, and everything else (derived datatypes, user-defined ops, MPI_LAND, ...) left to the MPI after a
// copy through host memory.
#pragma once

#include <mpi.h>

#include <optional>

#include "braid/braid.hpp"

namespace braid::mpi {

/// braid's type for a predefined MPI datatype it reduces and moves; nullopt for any other (derived types too).
std::optional<DataType> braidType(MPI_Datatype type);
/// braid's reduction for a predefined MPI op, when `type` supports it; nullopt for the others (MPI_LAND, user ops).
std::optional<ReduceKind> braidOp(MPI_Op op, DataType type);

}  // namespace braid::mpi
