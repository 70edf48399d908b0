// The interposer's requests, and MPI_Wait/Test and their -all/-any/-some forms over them. Two kinds:
//   - a non-blocking collective on GPU buffers: braid queued it on the legacy default stream; it is an MPI
//     generalized request, completed (MPI_Grequest_complete) once a CUDA event after it has fired;
//   - a non-blocking send or receive of a GPU buffer: a real MPI request on a host copy; a receive's bytes go to
//     the GPU when MPI reports it complete.
// Every other request passes through untouched, and with none of the interposer's pending the Wait/Test calls go
// straight to PMPI_.
#pragma once

#include <mpi.h>

#include <vector>

namespace braid::mpi {

/// A request for the GPU work queued so far on the legacy default stream (a non-blocking collective).
MPI_Request gpuWorkRequest();
/// Keeps `host` (a send's or receive's host copy) alive until `request` completes; for a receive, the bytes then
/// go to `device`.
void stagedRequest(MPI_Request request, std::vector<unsigned char> host, void* device);

}  // namespace braid::mpi
