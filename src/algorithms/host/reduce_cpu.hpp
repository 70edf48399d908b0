// Vectorised CPU reduction kernels: the element-wise combine step of every host reduction (allreduce, reduce,
// reduce-scatter) and the premul-sum pre-scaling. One kernel set per instruction set (generic x86-64, AVX2,
// AVX-512), chosen at run time from the CPU; every set gives bit-identical results, so ranks on different CPUs
// (and the BRAID_CPU_ISA knob) never change an answer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/elementwise_op.hpp"
#include "braid/types.hpp"

namespace braid::host {

/// dst[i] = op(srcs[0][i], srcs[1][i], ..., srcs[nsrcs-1][i]) for i < count, combining the sources in index
/// order, ((s0 op s1) op s2) ..., so every rank that reduces the same sources gets the same bits.
/// - kAvg: the sum divided by avgDivisor (integers: truncating division toward zero of the wrapped sum).
/// - kPremulSum reduces like kSum (the per-rank scale was applied earlier by scaleCopy).
/// - Integer sum and prod wrap modulo 2^bits.
/// - float16/bfloat16 accumulate all sources in float32 and round once (to nearest even).
/// - Float min/max propagate NaN: `acc = (acc < x || acc != acc) ? acc : x` (max with `>`), so a NaN in any
///   source gives NaN; between -0 and +0 the later source wins.
/// - Every NaN a float result holds is written as the canonical quiet NaN (positive, zero payload): NaN
///   payloads otherwise depend on the operand order the compiler picked, which differs between ISAs.
/// - Bool: sum/max = logical or, prod/min = logical and, band/bor/bxor bitwise on 0/1; any non-zero input byte
///   counts as true and outputs are always 0 or 1.
/// dst may equal srcs[0] exactly (no other source, no partial overlap); sources may overlap each other.
/// nsrcs >= 1. Nothing is read or written when count is 0. Throws Error kInvalidArgument for a combination
/// braid::checkReduceSupported refuses (bitwise on floats, avg/premul_sum on bool), nsrcs < 1, avgDivisor < 1 with
/// kAvg, or null pointers.
void reduceSources(void* dst, const void* const* srcs, int nsrcs, std::size_t count, DataType type, ReduceKind kind,
                   int avgDivisor = 1);

namespace detail {
/// One (type, op)'s reduction. stream: dst written with non-temporal stores where the kernel set has them (no
/// fence: the caller's).
using TypedReduce = void (*)(void* dst, const void* const* srcs, int nsrcs, std::size_t count, int avgDivisor,
                             bool stream);
}  // namespace detail

/// The kernel reduceSources runs for (type, kind) in the kernel set in use; throws as reduceSources does for a pair it
/// refuses. Calling it with stream false is reduceSources without its checks, for a caller whose arguments are its
/// own: dst and nsrcs >= 1 sources not null, count > 0, avgDivisor >= 1. A small call's reduction costs no more than
/// those checks.
using ReduceKernel = detail::TypedReduce;
ReduceKernel reduceKernelFor(DataType type, ReduceKind kind);

/// reduceSources, its result written to dst with non-temporal stores (the same bits): the lines of dst are not read
/// into the cache first, nor kept there. For a dst not read again soon, larger than the core's cache: a large call's
/// output, which then costs one pass over memory where it cost two. Returns after a store fence, so that a release
/// store after it (a round's arrival) publishes the result. Where the CPU has no such stores, reduceSources.
void reduceSourcesStreaming(void* dst, const void* const* srcs, int nsrcs, std::size_t count, DataType type,
                            ReduceKind kind, int avgDivisor = 1);

/// memcpy with reduceSourcesStreaming's stores and fence; dst and src must not overlap; either may be null when
/// bytes is 0.
void streamBytes(void* dst, const void* src, std::size_t bytes);

/// dst[i] = src[i] * scale, rounded once to the type. dst may equal src.
/// - float64: the float64 product; float32, float16, bfloat16: scale is first rounded to float32 (the
///   accumulation type) and the exact product src[i] * float(scale) is rounded once to the element type;
/// - integers: scale must be integral (else kInvalidArgument); the product wraps modulo 2^bits (the scale is
///   taken modulo 2^bits too);
/// - bool: dst[i] = src[i] != 0 && scale != 0.
/// NaN results are canonical, as in reduceSources.
void scaleCopy(void* dst, const void* src, std::size_t count, DataType type, double scale);

/// BRAID_COMPRESS's wire format (algorithms/host/net/net_compressed.cpp): dst[i] = src[i] rounded to bfloat16, the
/// bits of base/half.hpp's floatToBfloat16 (nearest even; a NaN keeps its top bits, made quiet). dst and src must not
/// overlap.
void toBfloat16(std::uint16_t* dst, const float* src, std::size_t count);
/// dst[i] = src[i] widened to float32 (exact). dst and src must not overlap.
void fromBfloat16(float* dst, const std::uint16_t* src, std::size_t count);

/// The compressed ring's fused steps, one pass each where the unfused sequence took three or four, with its bits:
/// s = a[i] + widen(b[i]) in float32 (for finishBfloat16 with avgDivisor > 1, divided by it), NaN made canonical, as
/// reduceSources of a and the widened b gives, then rounded with toBfloat16.
/// - sumToBfloat16: wire[i] = that rounding (a reduce-scatter step's partial sum, sent on; the float32 sum is not
///   kept);
/// - finishBfloat16: wire[i] = that rounding and dst[i] = its float32 value (the block's final value, which every
///   rank ends with). dst may equal a; nothing else may overlap.
void sumToBfloat16(std::uint16_t* wire, const float* a, const std::uint16_t* b, std::size_t count);
void finishBfloat16(float* dst, std::uint16_t* wire, const float* a, const std::uint16_t* b, std::size_t count,
                    int avgDivisor);

/// "avx512", "avx2" or "generic": the kernel set in use.
const char* reduceIsaName();

/// Caps the kernel set: "" or "auto" = best present, "generic", "avx2", "avx512" (never above what the CPU has;
/// asking for more than the CPU offers gives the best it has). Case-insensitive. Process-wide; meant for tests
/// and the BRAID_CPU_ISA knob. Unknown names throw braid::Error kInvalidArgument naming the value.
void setReduceIsaCap(std::string_view cap);

namespace detail {

/// The operator a kernel applies, after the dispatcher resolved the aliases: premul_sum -> sum, and on bool
/// sum/max -> or, prod/min -> and.
using KernelOp = ElementwiseOp;

/// A kernel set's reductions by [type][op]; null where no kernel applies.
using ReduceTable = std::array<std::array<TypedReduce, kNumElementwiseOps>, kNumDataTypes>;

/// One instruction set's kernels. Arguments are checked by the dispatcher (reduce_cpu.cpp), or vouched for by the
/// callers of reduceKernelFor: the kernels see only valid (type, op) pairs, count > 0, nsrcs >= 1 and avgDivisor >= 1,
/// and never throw.
struct ReduceKernels {
  const char* name;
  const ReduceTable* reduce;
  /// floatScale: the scale rounded to float32 (float32/16/bf16 data); doubleScale: float64 data; intScale: the
  /// integral scale modulo 2^64 (integers; bool uses intScale != 0).
  void (*scale)(void* dst, const void* src, std::size_t count, DataType type, float floatScale, double doubleScale,
                std::uint64_t intScale);
  void (*toBfloat16)(std::uint16_t* dst, const float* src, std::size_t count);
  void (*fromBfloat16)(float* dst, const std::uint16_t* src, std::size_t count);
  void (*sumToBfloat16)(std::uint16_t* wire, const float* a, const std::uint16_t* b, std::size_t count);
  void (*finishBfloat16)(float* dst, std::uint16_t* wire, const float* a, const std::uint16_t* b, std::size_t count,
                         float avgDivisor);                           // 1: a sum
  void (*streamCopy)(void* dst, const void* src, std::size_t bytes);  // no fence: the caller's
};

// Defined in reduce_cpu_generic.cpp, reduce_cpu_avx2.cpp and reduce_cpu_avx512.cpp (x86-64 builds only for the
// last two).
extern const ReduceKernels kGenericKernels;
extern const ReduceKernels kAvx2Kernels;
extern const ReduceKernels kAvx512Kernels;

}  // namespace detail

}  // namespace braid::host
