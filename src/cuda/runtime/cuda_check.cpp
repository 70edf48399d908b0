#include "cuda/runtime/cuda_check.hpp"

#include "base/error.hpp"

namespace braid::cuda {

ErrorCode errorCodeOf(cudaError_t status) noexcept {
  switch (status) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:  // libcuda.so is the toolkit's stub: no real driver
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:  // forward-compatibility package on an unsupported GPU
    case cudaErrorDevicesUnavailable:          // every device exclusive-process and taken
    case cudaErrorNoKernelImageForDevice:      // a GPU older than the architectures built (sm_80)
    case cudaErrorUnsupportedPtxVersion:       // PTX newer than the driver can JIT
      return ErrorCode::kUnavailable;
    default:
      return ErrorCode::kInternal;
  }
}

void checkCuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  fail(errorCodeOf(status), {}, what, ": ", cudaGetErrorName(status), ": ", cudaGetErrorString(status));
}

}  // namespace braid::cuda
