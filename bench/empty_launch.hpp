// The host's cost of launching an empty kernel, the floor that a device collective's host cost is judged against.
#pragma once

#include <cuda_runtime_api.h>

namespace braid::bench {

/// Microseconds per launch of an empty kernel (one block of 32 threads) through cuLaunchKernel, `launches` of them
/// back to back on `stream` after a warm-up, the host's time only. Throws std::runtime_error on a CUDA error.
double emptyLaunchMicros(cudaStream_t stream, int launches);

}  // namespace braid::bench
