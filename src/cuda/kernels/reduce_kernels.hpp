// The reduction kernels' launch interface: their parameter blocks (plain data, passed by value: kernels own no
// memory) and the lookup from (type, op, source count) to a kernel instantiation. Shared by the kernels
// (reduce_kernels.cuh, instantiated in reduce_kernels.cu and reduce_instances_*.cu) and by the host launcher
// (cuda/runtime/device_reduce.cpp), which fills the parameters and launches with cudaLaunchKernel; it compiles
// with the host compiler and nvcc alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "braid/types.hpp"

namespace braid::cuda::kernels {

/// Source counts up to this have their own kernel, with the source loop unrolled and every source's 16-byte
/// pack in flight at once; more take the generic kernel's run-time loop. 8: the GPUs of one NVLink box.
inline constexpr int kMaxUnrolledSources = 8;
/// The generic kernel's by-value pointer list. 128 pointers are 1 KiB of the 4 KiB kernel parameter space;
/// longer lists travel as a device copy the launcher makes (ReduceParams::spilled).
inline constexpr int kMaxInlineSources = 128;
/// Threads per block of every kernel here (their __launch_bounds__).
inline constexpr int kThreadsPerBlock = 512;

/// The operator a kernel applies, after the launcher resolved the aliases as braid::host::reduceSources does:
/// premul_sum -> sum (the scale was applied by scaleCopy), and on bool sum/max -> bor, prod/min -> band.
enum class DeviceOp : std::uint8_t { kSum, kProd, kMin, kMax, kAvg, kBand, kBor, kBxor };

template <int N>
struct SourceList {
  static_assert(N >= 1, "a reduction has at least one source");
  const void* ptr[N];
};

/// Parameters of reduceSourcesKernel<T, Op, Acc, kMaxSources>, whose ReduceParams<kMaxSources> holds the source
/// pointers by value. With kMaxSources <= kMaxUnrolledSources there are exactly kMaxSources sources; the generic
/// kernel (kMaxSources == kMaxInlineSources) reads nsrcs of them, from `spilled` when that is not null.
/// Elements [0, head) and [head + packs * lanes, count) go one at a time, the packs between 16 bytes at a time;
/// head == count (packs == 0) when the pointers do not share one alignment modulo 16.
template <int N>
struct ReduceParams {
  void* dst;
  const void* const* spilled;  ///< device array of nsrcs pointers, or nullptr: use srcs
  std::size_t count;
  std::size_t head;
  std::size_t packs;
  int nsrcs;
  int avgDivisor;  ///< >= 1; used by avg only
  SourceList<N> srcs;
};

/// Parameters of scaleCopyKernel<T>: dst[i] = src[i] * scale (see braid::host::scaleCopy), head/packs as above.
struct ScaleParams {
  void* dst;
  const void* src;
  std::size_t count;
  std::size_t head;
  std::size_t packs;
  float floatScale;        ///< the scale rounded to float32: float32, float16, bfloat16, float8 data
  double doubleScale;      ///< float64 data
  std::uint64_t intScale;  ///< the integral scale modulo 2^64: integers; bool uses intScale != 0
};

// 4 KiB is the kernel parameter limit every CUDA version and GPU accepts.
static_assert(sizeof(ReduceParams<kMaxInlineSources>) <= 4096, "the generic kernel's parameters fit 4 KiB");
static_assert(std::is_trivially_copyable_v<ReduceParams<1>> && std::is_trivially_copyable_v<ScaleParams>,
              "kernel parameters are copied bytewise by cudaLaunchKernel");
static_assert(kMaxUnrolledSources < kMaxInlineSources, "the generic kernel starts where the unrolled ones end");

/// The reduceSourcesKernel instantiation for (type, op) and nsrcs sources, as the host stub address
/// cudaLaunchKernel takes. It expects one ReduceParams<nsrcs> for nsrcs <= kMaxUnrolledSources, else one
/// ReduceParams<kMaxInlineSources>. nullptr when (type, op) has no kernel (bitwise ops on floats; on bool anything
/// but band, bor, bxor) or nsrcs < 1.
const void* reduceKernelFor(DataType type, DeviceOp op, int nsrcs);

/// The scaleCopyKernel instantiation for type (taking one ScaleParams); nullptr for an invalid type.
const void* scaleKernelFor(DataType type);

}  // namespace braid::cuda::kernels
