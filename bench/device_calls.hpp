// braid-bench-device's calls: each implementation's collective on one size's device buffers (braid's, NCCL's, and
// the device-to-device copy they are judged against), and the buffers' exact inputs and check.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>

#include "bench/driver_args.hpp"
#include "bench/nccl_loader.hpp"
#include "braid/braid.hpp"

namespace braid::bench {

/// Throws std::runtime_error naming `what` when `e` is an error.
void check(cudaError_t e, const char* what);

/// One implementation's call for one size, on `stream`.
using Call = std::function<void(cudaStream_t)>;

/// One size's buffers: device memory of the largest size, `count` elements of the size this is.
struct Setup {
  tools::BenchOptions o;
  int n = 0, me = 0;
  std::size_t count = 0;  ///< elements of the largest buffer of this size
  std::byte* send = nullptr;
  std::byte* recv = nullptr;
};

/// Fills the device buffers with the exact inputs of this size (driver_args' scheme).
void fill(const Setup& s, cudaStream_t stream);
/// The elements of the result that differ from the scheme's expectation.
long wrongElements(const Setup& s, cudaStream_t stream);

/// braid's call of s.o.collective; in place reads and writes recv (the driver scheme's convention).
Call braidCall(Communicator& c, const Setup& s);
/// NCCL's call of s.o.collective (alltoall as grouped sends and receives, as nccl-tests does).
Call ncclCall(const Nccl& nc, ncclComm_t comm, const Setup& s);
/// The reference the collectives' bandwidth is judged against on one GPU: rank 0 copies the message from its send
/// to its recv buffer (device to device) while the other ranks wait; nothing to verify.
Call memcpyCall(const Setup& s);

}  // namespace braid::bench
