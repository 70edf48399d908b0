// Makes the communicator's GPU current for one call, on whichever thread runs it (a call queued behind an async one
// runs on the progress thread; a caller may have another GPU current).
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/runtime/cuda_check.hpp"

namespace braid::device {

class DeviceScope {
 public:
  /// `device` < 0: nothing changes.
  explicit DeviceScope(int device) {
    if (device < 0) return;
    cuda::checkCuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) {
      cuda::checkCuda(cudaSetDevice(device), "cudaSetDevice(the communicator's device)");
    } else {
      previous_ = -1;
    }
  }
  ~DeviceScope() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace braid::device
