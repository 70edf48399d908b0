// The element types of the CPU reduction kernels (storage, accumulator and wrapping types, and their conversions)
// and the lanes their chunk loops load and store through. Part of reduce_kernels_impl.hpp, which includes it:
// everything here has internal linkage for the reasons its ODR note gives (one private copy per ISA translation unit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "algorithms/host/reduce_conversions_impl.hpp"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace braid::host::detail {
namespace {

// 64 elements: a multiple of every vector width (64 bytes of uint8 up to 8 zmm of int64) and small enough that
// the tail's padded copies are cheap.
constexpr std::size_t kChunk = 64;
// Up to this many elements, an end of a call is reduced element by element rather than through a padded chunk.
constexpr std::size_t kScalarTail = 16;

// ---- Element types. T: storage; A: the accumulator (float for float16/bfloat16/float8); U: the unsigned type
// integer arithmetic wraps in.

template <typename Int, typename UInt>
struct IntTraits {
  using T = Int;
  using A = Int;
  using U = UInt;
  static constexpr bool kFloat = false;
  static A widen(T x) { return x; }
  static T narrow(A a) { return a; }
};

struct BoolTraits {
  using T = std::uint8_t;
  using A = std::uint8_t;
  using U = std::uint8_t;
  static constexpr bool kFloat = false;
  static A widen(T x) { return x != 0; }  // any non-zero byte is true; results are always 0 or 1
  static T narrow(A a) { return a; }
};

template <typename F>
struct FloatTraits {
  using T = F;
  using A = F;
  static constexpr bool kFloat = true;
  static A widen(T x) { return x; }
  static T narrow(A a) { return a; }
};

struct BFloat16Traits {
  using T = std::uint16_t;
  using A = float;
  static constexpr bool kFloat = true;
  static A widen(T x) { return bfloat16ToFloatK(x); }
  static T narrow(A a) { return floatToBfloat16K(a); }
};

struct Float16Traits {
  using T = std::uint16_t;
  using A = float;
  static constexpr bool kFloat = true;
  static A widen(T x) { return halfToFloatK(x); }
  static T narrow(A a) { return floatToHalfK(a); }
};

// float8: fromDouble rounds scaleCopy's exact float64 product once.
struct Float8E4M3Traits {
  using T = std::uint8_t;
  using A = float;
  static constexpr bool kFloat = true;
  static A widen(T x) { return float8E4M3ToFloatK(x); }
  static T narrow(A a) { return floatToFloat8E4M3K(a); }
  static T fromDouble(double d) { return doubleToFloat8E4M3K(d); }
};

struct Float8E5M2Traits {
  using T = std::uint8_t;
  using A = float;
  static constexpr bool kFloat = true;
  static A widen(T x) { return float8E5M2ToFloatK(x); }
  static T narrow(A a) { return floatToFloat8E5M2K(a); }
  static T fromDouble(double d) { return doubleToFloat8E5M2K(d); }
};

// ---- Lanes: how the chunk loops load (widen) and store (narrow) elements, kWidth at a time. V holds kWidth
// accumulator values: A itself when kWidth is 1 (plain loops that GCC vectorises), a SIMD register where the
// conversion takes an intrinsic (float16 under F16C: 8 or 16 lanes per vcvtph2ps / vcvtps2ph). The operators
// below are written once for both: GCC's vector extensions give SIMD registers +, *, /, comparisons and ?:.

template <typename Tr>
struct ScalarLanes {
  using T = typename Tr::T;
  using A = typename Tr::A;
  using V = A;
  static constexpr std::size_t kWidth = 1;
  static V load(const T* p) { return Tr::widen(*p); }
  static void store(T* p, V v) { *p = Tr::narrow(v); }
  static V loadAcc(const A* p) { return *p; }
  static void storeAcc(A* p, V v) { *p = v; }
};

template <typename Tr>
struct LanesOf {
  using Type = ScalarLanes<Tr>;
};

#if defined(__F16C__)
struct F16cLanes {
  using T = std::uint16_t;
  using A = float;
#if defined(__AVX512F__)
  using V = __m512;
  static constexpr std::size_t kWidth = 16;
  // The all-ones maskz forms: GCC 12's plain _mm512_cvtph_ps/_mm512_cvtps_ph trip -Wmaybe-uninitialized.
  static V load(const T* p) {
    return _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store(T* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_maskz_cvtps_ph(0xffff, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static V loadAcc(const A* p) { return _mm512_loadu_ps(p); }
  static void storeAcc(A* p, V v) { _mm512_storeu_ps(p, v); }
#else
  using V = __m256;
  static constexpr std::size_t kWidth = 8;
  static V load(const T* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store(T* p, V v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static V loadAcc(const A* p) { return _mm256_loadu_ps(p); }
  static void storeAcc(A* p, V v) { _mm256_storeu_ps(p, v); }
#endif
  static_assert(kChunk % kWidth == 0);
};

template <>
struct LanesOf<Float16Traits> {
  using Type = F16cLanes;
};
#endif

// x in every lane of V (or x itself when V is a scalar).
template <typename V, typename S>
inline V splat(S x) {
  if constexpr (sizeof(V) == sizeof(S)) {
    return x;
  } else {
    V v = {};
    for (std::size_t i = 0; i < sizeof(V) / sizeof(S); ++i) v[i] = x;
    return v;
  }
}

}  // namespace
}  // namespace braid::host::detail
