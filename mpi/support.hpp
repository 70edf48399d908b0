// What every part of the MPI interposer shares: telling GPU from host buffers, braid's failures raised through the
// communicator's MPI error handler, and GPU buffers copied through host memory for the calls the MPI runs itself.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <vector>

#include "braid/braid.hpp"

namespace braid::mpi {

/// GPU (device or managed) memory; MPI_IN_PLACE and null are not.
bool onGpu(const void* p);
/// Whether braid can run a call on these buffers itself: every one given is GPU memory (braid refuses a call that
/// mixes host with GPU buffers; the MPI takes those, staged).
bool gpuOnly(std::initializer_list<const void*> buffers);

/// Runs `body` (a call on GPU buffers); an exception goes to the communicator's error handler with its message,
/// under an MPI error code of braid's, which is returned.
int guarded(MPI_Comm comm, const char* call, const std::function<void()>& body);

/// Throws when a CUDA call failed.
void checkCuda(int status, const char* what);
/// The calls braid runs are queued on the legacy default stream, after the work already there.
inline CallOptions onDefaultStream() { return CallOptions{.stream = nullptr}; }
/// Waits for the legacy default stream: MPI promises a finished buffer when a blocking call returns.
void finishGpuWork();

/// The bytes `count` elements of `type` span from a buffer's start (a derived type's holes included).
std::size_t spanOf(MPI_Datatype type, int count);
/// The bytes a buffer described by per-rank counts and displacements spans.
std::size_t spanOf(MPI_Datatype type, const int* counts, const int* displs, int n);
/// Says once per call name, at BRAID_LOG=info, that it went through host memory and the MPI.
void stagedOnce(const char* call);
/// Throws when a PMPI call did not succeed (under MPI_ERRORS_RETURN).
void checkMpi(int rc, const char* what);

int commSize(MPI_Comm comm);
int commRank(MPI_Comm comm);

/// A GPU buffer's copy in host memory, for a call the MPI runs itself: filled from the GPU (all of it, so that
/// bytes the call leaves alone go back unchanged), written back when the call wrote it. MPI_IN_PLACE and null
/// stay what they are.
class HostCopy {
 public:
  HostCopy(const void* buffer, std::size_t bytes);
  void* data() { return buffer_ == MPI_IN_PLACE ? MPI_IN_PLACE : host_.data(); }
  void writeBack();
  /// The host bytes, for a request that outlives this object.
  std::vector<unsigned char> release() { return std::move(host_); }

 private:
  const void* buffer_;
  std::vector<unsigned char> host_;
};

}  // namespace braid::mpi
