// CUDA runtime errors -> braid::Error, the library's one error model.
#pragma once

#include <cuda_runtime_api.h>

#include "braid/types.hpp"

namespace braid::cuda {

/// The ErrorCode a CUDA error maps to: kUnavailable where the machine cannot run CUDA code at all (no device, no
/// or too old a driver, no kernel image for this GPU), kInternal for everything else.
ErrorCode errorCodeOf(cudaError_t status) noexcept;

/// Throws braid::Error when status is not cudaSuccess, reading e.g.
/// "braid Unavailable: cudaLaunchKernel(reduce float32 sum): cudaErrorNoDevice: no CUDA-capable device is detected".
/// `what` names the call and what it was for.
void checkCuda(cudaError_t status, const char* what);

}  // namespace braid::cuda
