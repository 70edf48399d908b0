// A device call's CUDA stream, and a stream-ordered copy on it: what every file of this folder queues work with.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "algorithms/op_env.hpp"
#include "cuda/runtime/cuda_check.hpp"

namespace braid::device {

/// The call's stream (CallOptions::stream; null is the default stream).
inline cudaStream_t streamOf(const OpEnv& env) { return reinterpret_cast<cudaStream_t>(env.stream); }

/// Whether `stream` is being captured into a CUDA graph.
inline bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
}

/// Queues a device-to-device copy on `stream`; nothing for an empty or in-place one.
inline void copyOnStream(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return;
  cuda::checkCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync(shared GPU)");
}

}  // namespace braid::device
