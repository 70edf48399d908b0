#include "cuda/runtime/copy_engine.hpp"

#include <atomic>

#include "cuda/runtime/cuda_check.hpp"

namespace braid::cuda {

namespace {

// Cleared at the first refusal (a runtime or driver without batched copies): every later call copies plainly.
std::atomic<bool> supported{true};

}  // namespace

bool copyOnCopyEngine(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || stream == nullptr || stream == cudaStreamLegacy) return false;
  if (!supported.load(std::memory_order_relaxed)) return false;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (capture != cudaStreamCaptureStatusNone) return false;
  void* dsts[1] = {dst};
  const void* srcs[1] = {src};
  std::size_t sizes[1] = {bytes};
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
  std::size_t firstOf[1] = {0};
  const cudaError_t status = cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, firstOf, 1, stream);
  if (status == cudaErrorNotSupported || status == cudaErrorCallRequiresNewerDriver) {
    (void)cudaGetLastError();
    supported.store(false, std::memory_order_relaxed);
    return false;
  }
  checkCuda(status, "cudaMemcpyBatchAsync(a staged result, on a copy engine)");
  return true;
}

}  // namespace braid::cuda
