// Device-side element types and reduction operators: the GPU twin of src/algorithms/host/reduce_kernels_impl.hpp.
// Every (type, op) gives the same bits as braid::host::reduceSources for the same sources in the same order:
// - integers wrap (arithmetic in the unsigned type of the same width), avg truncates toward zero;
// - float16/bfloat16 accumulate in float32 and round once, to nearest even, when stored;
// - float8 (e4m3, e5m2) likewise: widened exactly to float32, rounded once to nearest even when stored, saturating
//   beyond the largest finite value (infinity included) to +-448 / +-57344 (__nv_cvt_float_to_fp8 with
//   __NV_SATFINITE: cvt.rn.satfinite on sm_89+, CUDA's exact emulation before), the host's base/float8.hpp rule;
// - float arithmetic is IEEE round-to-nearest whatever nvcc's flags say: float32 add/mul/div/compare are inline
//   PTX without .ftz (nvcc's -ftz=true, implied by -use_fast_math, would flush subnormal operands and results of
//   the instructions it generates; -prec-div=false would make `/` approximate), float64 goes through the
//   __d*_rn intrinsics (no flag flushes or approximates float64), and nothing is contracted into an FMA (the
//   host build uses -ffp-contract=off for the same reason);
// - float min/max propagate NaN (`acc = (acc < x || acc != acc) ? acc : x`, max with `>`): between -0 and +0 the
//   later source wins;
// - every NaN stored is the canonical quiet NaN (positive, zero payload; float8: e4m3 0x7f, e5m2 0x7e): GPU
//   arithmetic makes its own NaN bits (0x7fffffff), x86 others, and the bits must not depend on where a reduction ran;
// - bool is one byte: any non-zero byte reads as true, results are written as 0 or 1.
// Device code only: this header includes nothing from braid's host side.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

namespace braid::cuda::device {

/// Tag for braid's bool: one byte, 0 = false, anything else = true.
struct Bool8 {};

/// The premul-sum pre-multiplier in the forms the element types use: the scale rounded to float32 (float32,
/// float16, bfloat16, float8 data), as float64 (float64 data), and modulo 2^64 (integers; bool uses intScale != 0).
/// The host computes all three once, exactly as braid::host::scaleCopy does.
struct ScaleFactors {
  float floatScale;
  double doubleScale;
  std::uint64_t intScale;
};

inline constexpr std::uint32_t kCanonicalFloatNaN = 0x7fc00000u;
inline constexpr std::uint64_t kCanonicalDoubleNaN = 0x7ff8000000000000ull;
inline constexpr std::uint16_t kCanonicalHalfNaN = 0x7e00u;
inline constexpr std::uint16_t kCanonicalBfloat16NaN = 0x7fc0u;
inline constexpr std::uint8_t kCanonicalE4M3NaN = 0x7fu;
inline constexpr std::uint8_t kCanonicalE5M2NaN = 0x7eu;

// ---- Float32 arithmetic as inline PTX, immune to -ftz / -prec-div / -fmad (see the top of this file).

__device__ __forceinline__ float addF32(float a, float b) {
  float r;
  asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float mulF32(float a, float b) {
  float r;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float divF32(float a, float b) {
  float r;
  asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// (a < b || a != a) ? a : b: keeps a NaN accumulator, takes a NaN source. setp.nan is true when an operand is NaN.
__device__ __forceinline__ float minF32(float a, float b) {
  float r;
  asm("{\n\t.reg .pred keep, nan;\n\tsetp.lt.f32 keep, %1, %2;\n\tsetp.nan.f32 nan, %1, %1;\n\t"
      "or.pred keep, keep, nan;\n\tselp.f32 %0, %1, %2, keep;\n\t}"
      : "=f"(r)
      : "f"(a), "f"(b));
  return r;
}
// (a > b || a != a) ? a : b.
__device__ __forceinline__ float maxF32(float a, float b) {
  float r;
  asm("{\n\t.reg .pred keep, nan;\n\tsetp.gt.f32 keep, %1, %2;\n\tsetp.nan.f32 nan, %1, %1;\n\t"
      "or.pred keep, keep, nan;\n\tselp.f32 %0, %1, %2, keep;\n\t}"
      : "=f"(r)
      : "f"(a), "f"(b));
  return r;
}
// Exact widening; a float32 subnormal stays one.
__device__ __forceinline__ double f32ToF64(float a) {
  double r;
  asm("cvt.f64.f32 %0, %1;" : "=d"(r) : "f"(a));
  return r;
}

// ---- Element types. Elem<T>: Bits, the element's bit pattern (what packs hold); Acc, what the operators work on;
// load (bits -> Acc), store (Acc -> bits: narrowing, NaN canonicalisation) and scale (premul).

template <typename T>
struct Elem;

template <>
struct Elem<Bool8> {
  using Bits = std::uint8_t;
  using Acc = std::uint32_t;  // 0 or 1; a 32-bit register avoids byte arithmetic
  __device__ __forceinline__ static Acc load(Bits b) { return b != 0 ? 1u : 0u; }
  __device__ __forceinline__ static Bits store(Acc a) { return static_cast<Bits>(a); }
  __device__ __forceinline__ static Bits scale(Bits b, const ScaleFactors& s) {
    return static_cast<Bits>(b != 0 && s.intScale != 0);
  }
};

template <typename Int>
struct IntElem {
  static_assert(std::is_integral_v<Int> && sizeof(Int) != 2, "braid has 8-, 32- and 64-bit integers");
  using Bits = std::make_unsigned_t<Int>;
  using Acc = Int;
  __device__ __forceinline__ static Acc load(Bits b) { return static_cast<Acc>(b); }
  __device__ __forceinline__ static Bits store(Acc a) { return static_cast<Bits>(a); }
  // The product wraps modulo 2^bits, and so does the scale: multiplying by intScale mod 2^bits is multiplying by
  // the integral scale itself.
  __device__ __forceinline__ static Bits scale(Bits b, const ScaleFactors& s) {
    return static_cast<Bits>(b * static_cast<Bits>(s.intScale));
  }
};

template <>
struct Elem<std::int8_t> : IntElem<std::int8_t> {};
template <>
struct Elem<std::uint8_t> : IntElem<std::uint8_t> {};
template <>
struct Elem<std::int32_t> : IntElem<std::int32_t> {};
template <>
struct Elem<std::uint32_t> : IntElem<std::uint32_t> {};
template <>
struct Elem<std::int64_t> : IntElem<std::int64_t> {};
template <>
struct Elem<std::uint64_t> : IntElem<std::uint64_t> {};

template <>
struct Elem<float> {
  using Bits = std::uint32_t;
  using Acc = float;
  __device__ __forceinline__ static Acc load(Bits b) { return __uint_as_float(b); }
  __device__ __forceinline__ static Bits store(Acc a) { return a != a ? kCanonicalFloatNaN : __float_as_uint(a); }
  __device__ __forceinline__ static Bits scale(Bits b, const ScaleFactors& s) {
    return store(mulF32(load(b), s.floatScale));
  }
};

template <>
struct Elem<double> {
  using Bits = std::uint64_t;
  using Acc = double;
  __device__ __forceinline__ static Acc load(Bits b) { return __longlong_as_double(static_cast<long long>(b)); }
  __device__ __forceinline__ static Bits store(Acc a) {
    return a != a ? kCanonicalDoubleNaN : static_cast<Bits>(__double_as_longlong(a));
  }
  __device__ __forceinline__ static Bits scale(Bits b, const ScaleFactors& s) {
    return store(__dmul_rn(load(b), s.doubleScale));
  }
};

template <>
struct Elem<__half> {
  using Bits = std::uint16_t;
  using Acc = float;
  __device__ __forceinline__ static Acc load(Bits b) { return __half2float(__ushort_as_half(b)); }
  // cvt.rn.f16.f32: IEEE round to nearest even, subnormals kept, overflow to inf.
  __device__ __forceinline__ static Bits store(Acc a) {
    return a != a ? kCanonicalHalfNaN : __half_as_ushort(__float2half_rn(a));
  }
  // float16 times float32 is exact in float64; cvt.rn.f16.f64 then rounds it once (no double rounding via float).
  __device__ __forceinline__ static Bits scale(Bits b, const ScaleFactors& s) {
    const double product = __dmul_rn(f32ToF64(load(b)), f32ToF64(s.floatScale));
    return product != product ? kCanonicalHalfNaN : __half_as_ushort(__double2half(product));
  }
};

template <>
struct Elem<__nv_bfloat16> {
  using Bits = std::uint16_t;
  using Acc = float;
  __device__ __forceinline__ static Acc load(Bits b) { return __bfloat162float(__ushort_as_bfloat16(b)); }
  // cvt.rn.bf16.f32 (sm_80+; an exact emulation below): IEEE round to nearest even.
  __device__ __forceinline__ static Bits store(Acc a) {
    return a != a ? kCanonicalBfloat16NaN : __bfloat16_as_ushort(__float2bfloat16_rn(a));
  }
  // Exact float64 product rounded once (cvt.rn.bf16.f64 on sm_90, an exact emulation before).
  __device__ __forceinline__ static Bits scale(Bits b, const ScaleFactors& s) {
    const double product = __dmul_rn(f32ToF64(load(b)), f32ToF64(s.floatScale));
    return product != product ? kCanonicalBfloat16NaN : __bfloat16_as_ushort(__double2bfloat16(product));
  }
};

// float8: T is CUDA's __nv_fp8_e4m3 / __nv_fp8_e5m2, used as a tag (the bits travel as uint8_t). Widening is exact;
// narrowing takes the NaN case first because CUDA's conversions do not write braid's canonical NaN (their e5m2 NaN is
// 0x7f, and the hardware conversion need not clear a NaN's sign).
template <__nv_fp8_interpretation_t kKind, std::uint8_t kNaN>
struct Float8Elem {
  using Bits = std::uint8_t;
  using Acc = float;
  __device__ __forceinline__ static Acc load(Bits b) {
    if constexpr (kKind == __NV_E5M2) {
      return __half2float(__ushort_as_half(static_cast<unsigned short>(b << 8)));  // e5m2 is float16's top byte
    } else {
      // As the host's reduce_kernels_impl.hpp: S.1111.111 is the only NaN, subnormals are mantissa * 2^-9.
      const std::uint32_t em = b & 0x7fu;
      const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
      const std::uint32_t magnitude = em == 0x7fu   ? kCanonicalFloatNaN
                                      : em >= 0x08u ? (em << 20) + (120u << 23)
                                                    : __float_as_uint(mulF32(static_cast<float>(em), 0x1p-9f));
      return __uint_as_float(sign | magnitude);
    }
  }
  __device__ __forceinline__ static Bits store(Acc a) {
    return a != a ? kNaN : static_cast<Bits>(__nv_cvt_float_to_fp8(a, __NV_SATFINITE, kKind));
  }
  // float8 times float32 is exact in float64 (4 + 24 significant bits); __nv_cvt_double_to_fp8 rounds it once.
  __device__ __forceinline__ static Bits scale(Bits b, const ScaleFactors& s) {
    const double product = __dmul_rn(f32ToF64(load(b)), f32ToF64(s.floatScale));
    return product != product ? kNaN : static_cast<Bits>(__nv_cvt_double_to_fp8(product, __NV_SATFINITE, kKind));
  }
};

template <>
struct Elem<__nv_fp8_e4m3> : Float8Elem<__NV_E4M3, kCanonicalE4M3NaN> {};
template <>
struct Elem<__nv_fp8_e5m2> : Float8Elem<__NV_E5M2, kCanonicalE5M2NaN> {};

// ---- Arithmetic on accumulators.

template <typename Acc>
__device__ __forceinline__ Acc addAcc(Acc a, Acc b) {
  if constexpr (std::is_same_v<Acc, float>) {
    return addF32(a, b);
  } else if constexpr (std::is_same_v<Acc, double>) {
    return __dadd_rn(a, b);
  } else {
    static_assert(std::is_integral_v<Acc>, "accumulators are integers, float or double");
    using U = std::make_unsigned_t<Acc>;
    return static_cast<Acc>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));  // wraps; no signed overflow
  }
}

template <typename Acc>
__device__ __forceinline__ Acc mulAcc(Acc a, Acc b) {
  if constexpr (std::is_same_v<Acc, float>) {
    return mulF32(a, b);
  } else if constexpr (std::is_same_v<Acc, double>) {
    return __dmul_rn(a, b);
  } else {
    static_assert(std::is_integral_v<Acc>, "accumulators are integers, float or double");
    using U = std::make_unsigned_t<Acc>;
    return static_cast<Acc>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  }
}

// ---- Operators: combine(acc, x) folds the next source x into acc; finish(acc, divisor) runs once per result,
// before store. Only avg's finish does anything.

template <typename Acc>
struct SumOp {
  __device__ __forceinline__ static Acc combine(Acc a, Acc b) { return addAcc(a, b); }
  __device__ __forceinline__ static Acc finish(Acc a, int /*divisor*/) { return a; }
};

template <typename Acc>
struct ProdOp {
  __device__ __forceinline__ static Acc combine(Acc a, Acc b) { return mulAcc(a, b); }
  __device__ __forceinline__ static Acc finish(Acc a, int /*divisor*/) { return a; }
};

template <typename Acc>
struct MinOp {
  __device__ __forceinline__ static Acc combine(Acc a, Acc b) {
    if constexpr (std::is_same_v<Acc, float>) {
      return minF32(a, b);
    } else if constexpr (std::is_same_v<Acc, double>) {
      return ((a < b) | (a != a)) ? a : b;  // keeps a NaN accumulator, takes a NaN source; `|`: no branch
    } else {
      return a < b ? a : b;
    }
  }
  __device__ __forceinline__ static Acc finish(Acc a, int /*divisor*/) { return a; }
};

template <typename Acc>
struct MaxOp {
  __device__ __forceinline__ static Acc combine(Acc a, Acc b) {
    if constexpr (std::is_same_v<Acc, float>) {
      return maxF32(a, b);
    } else if constexpr (std::is_same_v<Acc, double>) {
      return ((a > b) | (a != a)) ? a : b;
    } else {
      return a > b ? a : b;
    }
  }
  __device__ __forceinline__ static Acc finish(Acc a, int /*divisor*/) { return a; }
};

/// The (wrapped) sum divided by the divisor (>= 1): floats divide in the accumulator type with IEEE rounding,
/// integers truncate toward zero. The host kernels divide 8- and 32-bit integers in float / float64 and
/// truncate, which is exact (a quotient of integers below 2^32 lies at least 2^-32 relatively from the next
/// integer, far above float64's rounding error; below 2^8 likewise for float), so integer division here gives
/// the same bits.
template <typename Acc>
struct AvgOp {
  __device__ __forceinline__ static Acc combine(Acc a, Acc b) { return addAcc(a, b); }
  __device__ __forceinline__ static Acc finish(Acc a, int divisor) {
    if constexpr (std::is_same_v<Acc, float>) {
      return divF32(a, static_cast<float>(divisor));
    } else if constexpr (std::is_same_v<Acc, double>) {
      return __ddiv_rn(a, static_cast<double>(divisor));
    } else {
      static_assert(std::is_integral_v<Acc>, "accumulators are integers, float or double");
      // 32-bit division where it suffices: 64-bit division is a long software sequence on the GPU.
      if constexpr (sizeof(Acc) <= 4 && std::is_signed_v<Acc>) {
        return static_cast<Acc>(static_cast<std::int32_t>(a) / divisor);  // never INT_MIN / -1: divisor >= 1
      } else if constexpr (sizeof(Acc) <= 4) {
        return static_cast<Acc>(static_cast<std::uint32_t>(a) / static_cast<std::uint32_t>(divisor));
      } else {
        return static_cast<Acc>(a / static_cast<Acc>(divisor));
      }
    }
  }
};

template <typename Acc>
struct BandOp {
  static_assert(std::is_integral_v<Acc>, "bitwise operators take integers and bool only");
  __device__ __forceinline__ static Acc combine(Acc a, Acc b) { return static_cast<Acc>(a & b); }
  __device__ __forceinline__ static Acc finish(Acc a, int /*divisor*/) { return a; }
};

template <typename Acc>
struct BorOp {
  static_assert(std::is_integral_v<Acc>, "bitwise operators take integers and bool only");
  __device__ __forceinline__ static Acc combine(Acc a, Acc b) { return static_cast<Acc>(a | b); }
  __device__ __forceinline__ static Acc finish(Acc a, int /*divisor*/) { return a; }
};

template <typename Acc>
struct BxorOp {
  static_assert(std::is_integral_v<Acc>, "bitwise operators take integers and bool only");
  __device__ __forceinline__ static Acc combine(Acc a, Acc b) { return static_cast<Acc>(a ^ b); }
  __device__ __forceinline__ static Acc finish(Acc a, int /*divisor*/) { return a; }
};

}  // namespace braid::cuda::device
