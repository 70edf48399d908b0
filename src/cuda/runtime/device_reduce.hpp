// Host entry points of the GPU reduction kernels: the device twins of braid::host::reduceSources and
// braid::host::scaleCopy (algorithms/host/reduce_cpu.hpp), bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "braid/types.hpp"

namespace braid::cuda {

/// dst[i] = op over srcs in order (device pointers), on `stream`, asynchronously. Same semantics as
/// braid::host::reduceSources, and the same bits for the same sources in the same order.
/// - srcs is a host array of nsrcs pointers to memory the current device can read (its own, or a peer's mapped
///   over NVLink/PCIe); dst is memory it can write. dst may equal srcs[0] exactly, nothing else may overlap dst.
/// - Every pointer must be aligned to its element size. Pointers that share one alignment modulo 16 bytes (the
///   usual case, offsets included) go 16 bytes per access; otherwise the kernel falls back to one element at a
///   time, correct but several times slower.
/// - Up to 128 sources travel in the kernel's parameters, so the call may be captured into a CUDA graph. More
///   sources are copied to a stream-ordered allocation first (cudaMallocAsync and a pageable cudaMemcpyAsync),
///   which graph capture refuses.
/// Throws braid::Error: kInvalidArgument for what host::reduceSources refuses and misaligned pointers (nothing
/// is launched then); kUnavailable when there is no usable device or no kernel image for it; kInternal for other
/// launch failures. Nothing touches the device when count is 0. Errors of the kernel's execution surface at the
/// stream's next synchronisation, as CUDA reports them.
void reduceSourcesOnDevice(void* dst, const void* const* srcs, int nsrcs, std::size_t count, DataType type,
                           ReduceKind kind, int avgDivisor, cudaStream_t stream);

/// dst[i] = src[i] * scale on `stream`, asynchronously, as braid::host::scaleCopy (float64 data multiply in
/// float64; float32, float16 and bfloat16 by the scale rounded to float32 with one rounding of the exact product;
/// integers by an integral scale, wrapping; bool: src != 0 && scale != 0). dst may equal src. Pointer rules and
/// errors as reduceSourcesOnDevice; a non-integral scale on integer data is kInvalidArgument.
void scaleCopyOnDevice(void* dst, const void* src, std::size_t count, DataType type, double scale, cudaStream_t stream);

/// Number of usable CUDA devices; 0 (never an exception) where there is no driver or no GPU.
int deviceCount() noexcept;

}  // namespace braid::cuda
