// The reduction kernels' templates, shared by the translation units that instantiate them: reduce_kernels.cu
// (the scale kernels and the (type, op) dispatch) and reduce_instances_*.cu (the reduction kernels, split by
// element width so that nvcc compiles them in parallel: ~650 kernels in one file took over a minute per
// architecture). Thin: the element semantics live in cuda/device/reduce_ops.cuh, the packed accesses in
// cuda/device/packed.cuh, argument checks, alignment analysis and grid sizing in the host launcher
// (cuda/runtime/device_reduce.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cuda/device/packed.cuh"
#include "cuda/device/reduce_ops.cuh"
#include "cuda/kernels/reduce_kernels.hpp"

namespace braid::cuda::kernels::detail {

using device::Elem;
using device::loadPack;
using device::Pack;
using device::storePack;

// Grid-stride loops: every thread visits a bounded, precomputed set of indices and returns; nothing waits on
// anything, so a kernel finishes whatever grid size the launcher picked.
__device__ __forceinline__ std::size_t globalThread() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::size_t gridThreads() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

// Source s of the parameter block. Unrolled kernels index with constants; the generic one reads the by-value list
// or, for long lists, the launcher's device copy.
template <typename Bits, int kMaxSources>
__device__ __forceinline__ const Bits* source(const ReduceParams<kMaxSources>& p, int s) {
  if constexpr (kMaxSources <= kMaxUnrolledSources) {
    return static_cast<const Bits*>(p.srcs.ptr[s]);
  } else {
    return static_cast<const Bits*>(p.spilled != nullptr ? p.spilled[s] : p.srcs.ptr[s]);
  }
}

// dst[i] = finish(op over sources of element i), element i = one lane of a pack or a lone element; the fold
// order, ((s0 op s1) op s2) ..., is the same either way, so a value's bits never depend on its position.
template <typename T, typename Op, typename Acc, int kMaxSources>
__global__ void __launch_bounds__(kThreadsPerBlock) reduceSourcesKernel(const ReduceParams<kMaxSources> p) {
  using E = Elem<T>;
  using Bits = typename E::Bits;
  using P = Pack<Bits>;
  constexpr bool kUnrolled = kMaxSources <= kMaxUnrolledSources;
  constexpr int kLanes = P::kLanes;
  static_assert(std::is_same_v<Acc, typename E::Acc>, "Acc is the element type's accumulator (float for halves)");
  static_assert(kUnrolled || kMaxSources == kMaxInlineSources, "unrolled counts or the generic list");
  static_assert(kMaxSources >= 1, "at least one source");

  Bits* const dst = static_cast<Bits*>(p.dst);
  const std::size_t first = globalThread();
  const std::size_t stride = gridThreads();

  for (std::size_t k = first; k < p.packs; k += stride) {
    const std::size_t i = p.head + k * kLanes;
    Acc acc[kLanes];
    if constexpr (kUnrolled) {
      // Every source's pack is loaded before any is combined: kMaxSources 16-byte loads in flight per thread.
      P in[kMaxSources];
#pragma unroll
      for (int s = 0; s < kMaxSources; ++s) in[s] = loadPack(source<Bits>(p, s) + i);
#pragma unroll
      for (int j = 0; j < kLanes; ++j) {
        Acc a = E::load(in[0].lane[j]);
#pragma unroll
        for (int s = 1; s < kMaxSources; ++s) a = Op::combine(a, E::load(in[s].lane[j]));
        acc[j] = a;
      }
    } else {
      const P in0 = loadPack(source<Bits>(p, 0) + i);
#pragma unroll
      for (int j = 0; j < kLanes; ++j) acc[j] = E::load(in0.lane[j]);
      // Batches of kBatch sources with all their loads issued first, then the rest one by one.
      constexpr int kBatch = 4;
      int s = 1;
      for (; s + kBatch <= p.nsrcs; s += kBatch) {
        P in[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) in[b] = loadPack(source<Bits>(p, s + b) + i);
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
#pragma unroll
          for (int j = 0; j < kLanes; ++j) acc[j] = Op::combine(acc[j], E::load(in[b].lane[j]));
        }
      }
#pragma unroll 1
      for (; s < p.nsrcs; ++s) {
        const P in = loadPack(source<Bits>(p, s) + i);
#pragma unroll
        for (int j = 0; j < kLanes; ++j) acc[j] = Op::combine(acc[j], E::load(in.lane[j]));
      }
    }
    P out;
#pragma unroll
    for (int j = 0; j < kLanes; ++j) out.lane[j] = E::store(Op::finish(acc[j], p.avgDivisor));
    storePack(dst + i, out);
  }

  // The lone elements: the head before the first aligned pack and the tail after the last (each shorter than a
  // pack), or all of them when the pointers cannot be packed together.
  const std::size_t tailStart = p.head + p.packs * kLanes;
  const std::size_t lone = p.head + (p.count - tailStart);
  const int nsrcs = kUnrolled ? kMaxSources : p.nsrcs;
  for (std::size_t k = first; k < lone; k += stride) {
    const std::size_t i = k < p.head ? k : tailStart + (k - p.head);
    Acc a = E::load(source<Bits>(p, 0)[i]);
#pragma unroll
    for (int s = 1; s < nsrcs; ++s) a = Op::combine(a, E::load(source<Bits>(p, s)[i]));
    dst[i] = E::store(Op::finish(a, p.avgDivisor));
  }
}

// dst[i] = src[i] * scale, rounded once to T (Elem<T>::scale); the premul step of premul_sum.
template <typename T>
__global__ void __launch_bounds__(kThreadsPerBlock) scaleCopyKernel(const ScaleParams p) {
  using E = Elem<T>;
  using Bits = typename E::Bits;
  using P = Pack<Bits>;
  constexpr int kLanes = P::kLanes;
  const device::ScaleFactors factors{p.floatScale, p.doubleScale, p.intScale};
  Bits* const dst = static_cast<Bits*>(p.dst);
  const Bits* const src = static_cast<const Bits*>(p.src);
  const std::size_t first = globalThread();
  const std::size_t stride = gridThreads();

  for (std::size_t k = first; k < p.packs; k += stride) {
    const std::size_t i = p.head + k * kLanes;
    const P in = loadPack(src + i);
    P out;
#pragma unroll
    for (int j = 0; j < kLanes; ++j) out.lane[j] = E::scale(in.lane[j], factors);
    storePack(dst + i, out);
  }
  const std::size_t tailStart = p.head + p.packs * kLanes;
  const std::size_t lone = p.head + (p.count - tailStart);
  for (std::size_t k = first; k < lone; k += stride) {
    const std::size_t i = k < p.head ? k : tailStart + (k - p.head);
    dst[i] = E::scale(src[i], factors);
  }
}

// ---- Kernel lookup: taking a kernel's address instantiates it and gives cudaLaunchKernel its host stub.

template <typename T, template <typename> class Op, int kMaxSources>
const void* reduceKernelAddress() {
  using Acc = typename Elem<T>::Acc;
  return reinterpret_cast<const void*>(&reduceSourcesKernel<T, Op<Acc>, Acc, kMaxSources>);
}

template <typename T, template <typename> class Op>
const void* forSourceCount(int nsrcs) {
  static_assert(kMaxUnrolledSources == 8, "one case per unrolled source count below");
  switch (nsrcs) {
    case 1:
      return reduceKernelAddress<T, Op, 1>();
    case 2:
      return reduceKernelAddress<T, Op, 2>();
    case 3:
      return reduceKernelAddress<T, Op, 3>();
    case 4:
      return reduceKernelAddress<T, Op, 4>();
    case 5:
      return reduceKernelAddress<T, Op, 5>();
    case 6:
      return reduceKernelAddress<T, Op, 6>();
    case 7:
      return reduceKernelAddress<T, Op, 7>();
    case 8:
      return reduceKernelAddress<T, Op, 8>();
    default:
      return nsrcs > kMaxUnrolledSources ? reduceKernelAddress<T, Op, kMaxInlineSources>() : nullptr;
  }
}

// Bitwise operators exist for integers and bool only; bool has nothing else (the launcher maps its
// sum/prod/min/max to bor/band), floats nothing bitwise.
template <typename T>
const void* reduceKernelForType(DeviceOp op, int nsrcs) {
  constexpr bool kBool = std::is_same_v<T, device::Bool8>;
  constexpr bool kInteger = std::is_integral_v<typename Elem<T>::Acc> && !kBool;
  if constexpr (kBool || kInteger) {
    switch (op) {
      case DeviceOp::kBand:
        return forSourceCount<T, device::BandOp>(nsrcs);
      case DeviceOp::kBor:
        return forSourceCount<T, device::BorOp>(nsrcs);
      case DeviceOp::kBxor:
        return forSourceCount<T, device::BxorOp>(nsrcs);
      default:
        break;
    }
  }
  if constexpr (!kBool) {
    switch (op) {
      case DeviceOp::kSum:
        return forSourceCount<T, device::SumOp>(nsrcs);
      case DeviceOp::kProd:
        return forSourceCount<T, device::ProdOp>(nsrcs);
      case DeviceOp::kMin:
        return forSourceCount<T, device::MinOp>(nsrcs);
      case DeviceOp::kMax:
        return forSourceCount<T, device::MaxOp>(nsrcs);
      case DeviceOp::kAvg:
        return forSourceCount<T, device::AvgOp>(nsrcs);
      default:
        break;
    }
  }
  return nullptr;
}

// Each element type's kernels are instantiated in exactly one reduce_instances_*.cu; everywhere else these
// declarations keep them from being instantiated again.
extern template const void* reduceKernelForType<device::Bool8>(DeviceOp, int);
extern template const void* reduceKernelForType<std::int8_t>(DeviceOp, int);
extern template const void* reduceKernelForType<std::uint8_t>(DeviceOp, int);
extern template const void* reduceKernelForType<std::int32_t>(DeviceOp, int);
extern template const void* reduceKernelForType<std::uint32_t>(DeviceOp, int);
extern template const void* reduceKernelForType<std::int64_t>(DeviceOp, int);
extern template const void* reduceKernelForType<std::uint64_t>(DeviceOp, int);
extern template const void* reduceKernelForType<__half>(DeviceOp, int);
extern template const void* reduceKernelForType<__nv_bfloat16>(DeviceOp, int);
extern template const void* reduceKernelForType<float>(DeviceOp, int);
extern template const void* reduceKernelForType<double>(DeviceOp, int);
extern template const void* reduceKernelForType<__nv_fp8_e4m3>(DeviceOp, int);
extern template const void* reduceKernelForType<__nv_fp8_e5m2>(DeviceOp, int);

}  // namespace braid::cuda::kernels::detail
