// Small host-to-device writes by the stream's own memory operations (cuStreamBatchMemOp's 64- and 32-bit value
// writes, which the GPU's front end performs) instead of a copy. Where processes share a GPU without MPS, a small
// cudaMemcpyAsync from host memory waits for the GPU to switch to the caller's context (about 200 us on an H200,
// measured), while a value write does not (about 10 us): the staged path delivers small results this way there.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace braid::cuda {

/// Largest result written word by word. Each write carries a fence, about 1.4 us on the GPU's front end: measured
/// for 2 processes on one H200 (bench/results/onegpu-h200-inplace-2026-12-03.json), a staged allreduce took 19.6 us
/// at 8 B, 103 us at 512 B and 195 us at 1 KiB this way, against about 170 us by a copy up to 16 KiB. (A batch whose
/// later writes skip the fence, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER, was refused there as an invalid argument.)
inline constexpr std::size_t kStreamWriteMaxBytes = 512;

/// Queues the writes of `bytes` bytes from host memory `src` to device memory `dst` on `stream` as value writes,
/// in stream order; `src` is read before this returns. Returns false, having queued nothing, where that cannot be
/// done: `dst` not device memory or not 4-byte aligned, `bytes` not a multiple of 4 or over kStreamWriteMaxBytes,
/// or a driver without stream memory operations. Throws braid::Error when the driver fails a write it accepted.
bool writeByStreamOps(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

/// A 64-bit word the stream's front end writes, or waits for until it is at least `value`. Neither takes the GPU's
/// engines, so where processes share a GPU without MPS neither waits for a context switch, and a stream held in a
/// wait lets other contexts' kernels run (measured on an H200: 3.6 us per small kernel of one process while the
/// other's stream waited).
struct StreamWord {
  enum class Kind { kWrite, kWaitAtLeast };
  Kind kind;
  void* address;  ///< device memory (or memory mapped from a peer process), 8-byte aligned
  std::uint64_t value;
};

/// Queues `words` on `stream` in order, in one batch (at most 255). Throws braid::Error naming `what`: kUnavailable
/// where the driver has no 64-bit stream memory operations, kInternal when it refuses them.
void queueStreamWords(const StreamWord* words, std::size_t n, cudaStream_t stream, const char* what);

/// Whether the current device takes 64-bit stream memory operations.
bool streamWordsSupported();

}  // namespace braid::cuda
