// Small host-to-device writes by the stream's own memory operations (cuStreamBatchMemOp's 64- and 32-bit value
// writes, which the GPU's front end performs) instead of a copy. Where processes share a GPU without MPS, a small
// cudaMemcpyAsync from host memory waits for the GPU to switch to the caller's context (about 200 us on an H200,
// measured), while value writes do not (about 10 us): the staged path delivers small results this way there.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace braid::cuda {

/// Largest write worth doing word by word: from 32 KiB on, a copy from pinned memory is as fast (measured).
inline constexpr std::size_t kStreamWriteMaxBytes = 16 * 1024;

/// Queues the writes of `bytes` bytes from host memory `src` to device memory `dst` on `stream` as value writes,
/// in stream order; `src` is read before this returns. Returns false, having queued nothing, where that cannot be
/// done: `dst` not device memory or not 4-byte aligned, `bytes` not a multiple of 4 or over kStreamWriteMaxBytes,
/// or a driver without stream memory operations. Throws braid::Error when the driver fails a write it accepted.
bool writeByStreamOps(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

}  // namespace braid::cuda
