// Host-to-device copies that a GPU shared by several processes can run without switching contexts.
//
// Without MPS, processes on one GPU take turns on its compute engine, and each turn costs a context switch (about
// 140 us on an H200, measured with two processes). The copy engines are not part of those turns. A plain
// cudaMemcpyAsync of under 32 KiB from pinned host memory is carried out through the compute engine, so it waits
// for a switch like a kernel does; the same copy queued by cudaMemcpyBatchAsync with
// cudaMemcpyFlagPreferOverlapWithCompute goes to a copy engine and does not (measured on the H200, 8 B to 64 KiB,
// with and without kernels in both processes).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace braid::cuda {

/// Queues a copy of `bytes` bytes from `src` to `dst` on `stream`, in stream order, as a copy-engine copy. Returns
/// false, having queued nothing, where it cannot: the legacy default stream (the batch call refuses it), a stream
/// being captured into a graph (a refused call would end the capture), or a runtime or driver without batched
/// copies. Throws braid::Error when the runtime fails a copy it accepted.
bool copyOnCopyEngine(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

}  // namespace braid::cuda
