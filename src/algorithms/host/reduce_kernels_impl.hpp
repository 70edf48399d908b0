// The CPU reduction kernels, written once and compiled three times: reduce_cpu_generic.cpp, reduce_cpu_avx2.cpp
// and reduce_cpu_avx512.cpp include this file under different -m flags, and each exports one ReduceKernels table.
// Include it from those translation units only, and nothing after it but wire_kernels_impl.hpp and the table (the
// one other includer, tests/unit/float8_test.cpp, checks its conversions: internal linkage keeps that copy its own).
//
// ODR hazard, and why everything below sits in an anonymous namespace: an inline or template function used by
// several translation units is emitted in each of them as a weak (COMDAT) copy, and the linker keeps one copy for
// all. If the AVX-512 unit's copy wins, the generic kernels run AVX-512 instructions and die with SIGILL on an
// older CPU (or the AVX-512 kernels silently run the slow copy). So:
// - all kernel code has internal linkage (anonymous namespace), hence one private copy per ISA unit;
// - the kernels call no inline function from elsewhere: not std::min/std::max/std::bit_cast (each a template
//   emitted out of line at -O0), not braid::halfToFloat from base/half.hpp nor base/float8.hpp's conversions
//   (reduce_conversions_impl.hpp duplicates them, and the tests check both copies bit for bit); compiler builtins
//   and intrinsics are fine, being always inlined;
// - nothing here needs dynamic initialisation: the AVX-512 unit's static initialisers would run at load time
//   on every CPU (the tables are constinit).
//
// Shape of the code: every loop body works on kChunk elements with a compile-time trip count, so GCC vectorises
// it even at -O2 (whose "very cheap" cost model refuses loops that need an epilogue or run-time alias checks;
// __restrict rules out the latter). A tail shorter than kChunk goes through the same chunk code on padded copies,
// which keeps its bits identical to the body's. Results never depend on the ISA: the project builds with
// -ffp-contract=off (no FMA contraction), every operation is an IEEE-rounded add/mul/div/compare done in the same
// order, and NaN results are canonicalised (the payload of op(NaN, NaN) follows operand order, which the
// compiler is free to swap).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "algorithms/host/reduce_conversions_impl.hpp"
#include "algorithms/host/reduce_cpu.hpp"
#include "algorithms/host/reduce_lanes_impl.hpp"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace braid::host::detail {
namespace {

// Bytes of the accumulator tile for three or more sources: each source is read in tile-sized runs while the
// accumulator stays in L1. 2, 4, 8 and 16 KiB ran within a few percent of each other for 8 sources of 256 KiB
// to 64 MiB on a Sapphire Rapids VM (32 KiB was slower in L2); 4 KiB is the middle of that plateau.
constexpr std::size_t kTileBytes = 4096;

// ---- Operators: apply(acc, x) folds the next source x into acc.

template <typename Tr>
struct SumOp {
  template <typename V>
  static V apply(V a, V b) {
    if constexpr (Tr::kFloat) {
      return a + b;
    } else {
      using U = typename Tr::U;
      return static_cast<V>(static_cast<U>(a) + static_cast<U>(b));  // wraps; no signed-overflow UB
    }
  }
};

template <typename Tr>
struct ProdOp {
  template <typename V>
  static V apply(V a, V b) {
    if constexpr (Tr::kFloat) {
      return a * b;
    } else {
      using U = typename Tr::U;
      return static_cast<V>(static_cast<U>(a) * static_cast<U>(b));
    }
  }
};

// keep ? a : b. Scalar floats go through integer masks: in some of these loops (a float ?: feeding
// floatToHalfK's float add) GCC does not if-convert the float form, and the loop stays scalar. For double the
// plain ?: vectorises better (SSE2 has no 64-bit mask arithmetic to spare). Found with -fopt-info-vec.
template <typename V, typename M>
inline V pick(M keep, V a, V b) {
  if constexpr (std::is_same_v<V, float>) {
    return bitCast<float>(select(keep, bitCast<std::uint32_t>(a), bitCast<std::uint32_t>(b)));
  } else {
    return keep ? a : b;  // double, integers, and SIMD lanes (GCC's vector ?:)
  }
}

// Float min/max keep a NaN accumulator and take a NaN source, so NaN propagates from any position; the
// comparisons are exact in every ISA, so the choice never differs. `|` rather than `||` keeps it branch-free
// (and is what GCC's vector extensions offer).
template <typename Tr>
struct MinOp {
  template <typename V>
  static V apply(V a, V b) {
    if constexpr (Tr::kFloat) {
      return pick((a < b) | (a != a), a, b);
    } else {
      return a < b ? a : b;
    }
  }
};

template <typename Tr>
struct MaxOp {
  template <typename V>
  static V apply(V a, V b) {
    if constexpr (Tr::kFloat) {
      return pick((a > b) | (a != a), a, b);
    } else {
      return a > b ? a : b;
    }
  }
};

template <typename Tr>
struct AndOp {
  template <typename V>
  static V apply(V a, V b) {
    return static_cast<V>(a & b);
  }
};

template <typename Tr>
struct OrOp {
  template <typename V>
  static V apply(V a, V b) {
    return static_cast<V>(a | b);
  }
};

template <typename Tr>
struct XorOp {
  template <typename V>
  static V apply(V a, V b) {
    return static_cast<V>(a ^ b);
  }
};

// ---- Finishers: applied once to each combined value before it is narrowed and stored.

template <typename Tr>
struct NoFinish {
  explicit NoFinish(int /*divisor*/) {}
  template <typename V>
  V operator()(V a) const {
    return a;
  }
};

template <typename Tr>
struct AvgFinish {
  using A = typename Tr::A;
  // Floats divide in the accumulator type. Integers of up to 32 bits divide in floating point and truncate:
  // exact, because a quotient of integers |sum| < 2^bits is at least 1/divisor from the next integer, i.e.
  // relatively at least 2^-bits, far above the rounding error of float (for 8 bits) or float64 (for 32), and it
  // vectorises where integer division does not. 64-bit integers use `/`.
  static constexpr bool kViaFloat = !Tr::kFloat && sizeof(A) <= 4;
  using D = std::conditional_t<sizeof(A) == 1, float, double>;
  explicit AvgFinish(int divisor) : divisor_(static_cast<A>(divisor)), divisorFloat_(static_cast<D>(divisor)) {}
  template <typename V>
  V operator()(V a) const {
    if constexpr (Tr::kFloat) {
      return a / divisor_;
    } else if constexpr (kViaFloat) {
      return static_cast<V>(static_cast<D>(a) / divisorFloat_);
    } else {
      return static_cast<V>(a / divisor_);
    }
  }
  A divisor_;
  D divisorFloat_;
};

// NaN -> the canonical quiet NaN.
template <typename Tr, typename V>
inline V canonical(V a) {
  if constexpr (!Tr::kFloat) {
    return a;
  } else if constexpr (sizeof(typename Tr::A) == 8) {
    return pick(a != a, splat<V>(kDoubleNaN), a);
  } else {
    return pick(a != a, splat<V>(kFloatNaN), a);
  }
}

// ---- Chunk primitives: each handles exactly kChunk elements, kWidth lanes at a time.

template <typename Tr, typename Op, typename Fin>
struct Chunk {
  using T = typename Tr::T;
  using A = typename Tr::A;
  using L = typename LanesOf<Tr>::Type;
  using V = typename L::V;
  static constexpr std::size_t kW = L::kWidth;

  static V out(V v, const Fin& fin) { return canonical<Tr>(fin(v)); }

  // acc = w(a)
  static void first1(A* __restrict acc, const T* __restrict a) {
    for (std::size_t j = 0; j < kChunk; j += kW) L::storeAcc(acc + j, L::load(a + j));
  }

  // acc = w(a) op w(b)
  static void first2(A* __restrict acc, const T* __restrict a, const T* __restrict b) {
    for (std::size_t j = 0; j < kChunk; j += kW) L::storeAcc(acc + j, Op::apply(L::load(a + j), L::load(b + j)));
  }

  // acc = acc op w(b)
  static void accum(A* __restrict acc, const T* __restrict b) {
    for (std::size_t j = 0; j < kChunk; j += kW) L::storeAcc(acc + j, Op::apply(L::loadAcc(acc + j), L::load(b + j)));
  }

  // dst = n(fin(acc))
  static void store(T* __restrict dst, const A* __restrict acc, const Fin& fin) {
    for (std::size_t j = 0; j < kChunk; j += kW) L::store(dst + j, out(L::loadAcc(acc + j), fin));
  }

  // dst = n(fin(acc op w(b)))
  static void storeLast(T* __restrict dst, const A* __restrict acc, const T* __restrict b, const Fin& fin) {
    for (std::size_t j = 0; j < kChunk; j += kW) {
      L::store(dst + j, out(Op::apply(L::loadAcc(acc + j), L::load(b + j)), fin));
    }
  }

  // One or two sources straight to dst, no accumulator. kInPlace: source 0 is dst itself (a is not read), so
  // the __restrict promises hold when the caller passes dst == srcs[0].
  template <bool kInPlace>
  static void direct1(T* __restrict dst, const T* __restrict a, const Fin& fin) {
    const T* s0 = kInPlace ? dst : a;
    for (std::size_t j = 0; j < kChunk; j += kW) L::store(dst + j, out(L::load(s0 + j), fin));
  }

  template <bool kInPlace>
  static void direct2(T* __restrict dst, const T* __restrict a, const T* __restrict b, const Fin& fin) {
    const T* s0 = kInPlace ? dst : a;
    for (std::size_t j = 0; j < kChunk; j += kW) {
      L::store(dst + j, out(Op::apply(L::load(s0 + j), L::load(b + j)), fin));
    }
  }
};

// Copies n < kChunk elements into a zero-padded chunk (the padding's results are computed and dropped). Only the
// tail is cleared, by the library's memset: the compiler inlines a whole-chunk clear as `rep stos`, whose start-up
// cost more than the reduction of a few elements itself.
template <typename T>
inline void padChunk(T (&buf)[kChunk], const T* src, std::size_t n) {
  __builtin_memcpy(buf, src, n * sizeof(T));
  std::memset(static_cast<void*>(buf + n), 0, (kChunk - n) * sizeof(T));
}

// Stores one chunk of kChunk * sizeof(T) bytes (a multiple of 64) at a 64-byte aligned dst with non-temporal
// stores: the lines go to memory without first being read into the cache (the caller fences). Where the target has
// no such store, a plain copy.
template <typename T>
inline void streamChunk(T* __restrict dst, const T* __restrict chunk) {
  static_assert(kChunk * sizeof(T) % 64 == 0, "a chunk is whole cache lines");
  constexpr std::size_t kBytes = kChunk * sizeof(T);
  auto* d = reinterpret_cast<char*>(dst);
  const auto* s = reinterpret_cast<const char*>(chunk);
#if defined(__AVX512F__)
  for (std::size_t b = 0; b < kBytes; b += 64) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + b), _mm512_load_si512(reinterpret_cast<const void*>(s + b)));
  }
#elif defined(__AVX2__)
  for (std::size_t b = 0; b < kBytes; b += 32) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + b), _mm256_load_si256(reinterpret_cast<const __m256i*>(s + b)));
  }
#elif defined(__SSE2__)
  for (std::size_t b = 0; b < kBytes; b += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + b), _mm_load_si128(reinterpret_cast<const __m128i*>(s + b)));
  }
#else
  __builtin_memcpy(d, s, kBytes);
#endif
}

// Reduces the elements [from, from + n), n < kChunk, through a zero-padded chunk: the ends of a call.
template <typename Tr, typename Op, typename Fin>
void reducePartial(typename Tr::T* dst, const void* const* srcsRaw, int nsrcs, std::size_t from, std::size_t n,
                   const Fin& fin) {
  using T = typename Tr::T;
  using C = Chunk<Tr, Op, Fin>;
  if (n == 0) return;
  if constexpr (C::kW == 1) {
    // A few elements (a small call's whole payload) cost less one by one than padding a chunk per source: the
    // same operations per element, so the same bits.
    if (n <= kScalarTail) {
      using L = typename C::L;
      for (std::size_t i = from; i < from + n; ++i) {
        auto acc = L::load(static_cast<const T*>(srcsRaw[0]) + i);
        for (int s = 1; s < nsrcs; ++s) acc = Op::apply(acc, L::load(static_cast<const T*>(srcsRaw[s]) + i));
        L::store(dst + i, C::out(acc, fin));
      }
      return;
    }
  }
  alignas(64) T pad[kChunk];
  alignas(64) typename Tr::A acc[kChunk];
  padChunk(pad, static_cast<const T*>(srcsRaw[0]) + from, n);
  C::first1(acc, pad);
  for (int s = 1; s < nsrcs; ++s) {
    padChunk(pad, static_cast<const T*>(srcsRaw[s]) + from, n);
    C::accum(acc, pad);
  }
  C::store(pad, acc, fin);
  __builtin_memcpy(dst + from, pad, n * sizeof(T));
}

// Three or more sources over [from, end), whole chunks: tile by tile, source 0 and 1 start the accumulator, the
// middle sources fold into it, the last one folds in on the way out (through a chunk in L1 and streamChunk with
// kStream). dst == srcs[0] is safe: a tile's source-0 reads all precede its dst writes.
template <typename Tr, typename Op, typename Fin, bool kStream>
void reduceTiles(typename Tr::T* dst, const void* const* srcsRaw, int nsrcs, std::size_t from, std::size_t end,
                 const Fin& fin) {
  using T = typename Tr::T;
  using A = typename Tr::A;
  using C = Chunk<Tr, Op, Fin>;
  static_assert(kTileBytes % (kChunk * sizeof(A)) == 0, "a tile holds whole chunks");
  constexpr std::size_t kTile = kTileBytes / sizeof(A);
  const auto src = [srcsRaw](int s) { return static_cast<const T*>(srcsRaw[s]); };
  alignas(64) A acc[kTile];
  alignas(64) T out[kChunk];
  for (std::size_t t = from; t < end; t += kTile) {
    const std::size_t m = end - t < kTile ? end - t : kTile;
    for (std::size_t c = 0; c < m; c += kChunk) C::first2(acc + c, src(0) + t + c, src(1) + t + c);
    for (int s = 2; s < nsrcs - 1; ++s) {
      const T* p = src(s) + t;
      for (std::size_t c = 0; c < m; c += kChunk) C::accum(acc + c, p + c);
    }
    const T* last = src(nsrcs - 1) + t;
    for (std::size_t c = 0; c < m; c += kChunk) {
      if constexpr (kStream) {
        C::storeLast(out, acc + c, last + c, fin);
        streamChunk(dst + t + c, out);
      } else {
        C::storeLast(dst + t + c, acc + c, last + c, fin);
      }
    }
  }
}

// stream: dst's whole lines are written with non-temporal stores (streamChunk), each chunk computed into a buffer
// that stays in L1 first; the elements before dst's first line boundary and after the last whole chunk go the
// ordinary way. (A dst that is not element-aligned, outside the contract, is written the ordinary way throughout.)
template <typename Tr, typename Op, typename Fin>
void reduceTyped(void* dstRaw, const void* const* srcsRaw, int nsrcs, std::size_t count, int avgDivisor, bool stream) {
  using T = typename Tr::T;
  using C = Chunk<Tr, Op, Fin>;
  const Fin fin(avgDivisor);
  T* dst = static_cast<T*>(dstRaw);
  const auto src = [srcsRaw](int s) { return static_cast<const T*>(srcsRaw[s]); };
  const bool inPlace = dst == src(0);
  std::size_t start = 0;
  if (stream) {
    const std::size_t misaligned = reinterpret_cast<std::uintptr_t>(dst) % 64;
    if (misaligned % sizeof(T) != 0) {
      stream = false;
    } else if (misaligned != 0) {
      start = (64 - misaligned) / sizeof(T) < count ? (64 - misaligned) / sizeof(T) : count;
    }
  }
  const std::size_t end = start + (count - start) / kChunk * kChunk;
  reducePartial<Tr, Op, Fin>(dst, srcsRaw, nsrcs, 0, start, fin);

  if (stream) {
    alignas(64) T out[kChunk];
    if (nsrcs == 1) {
      for (std::size_t i = start; i < end; i += kChunk) {
        C::template direct1<false>(out, src(0) + i, fin);
        streamChunk(dst + i, out);
      }
    } else if (nsrcs == 2) {
      for (std::size_t i = start; i < end; i += kChunk) {
        C::template direct2<false>(out, src(0) + i, src(1) + i, fin);
        streamChunk(dst + i, out);
      }
    } else {
      reduceTiles<Tr, Op, Fin, true>(dst, srcsRaw, nsrcs, start, end, fin);
    }
  } else if (nsrcs == 1) {
    for (std::size_t i = 0; i < end; i += kChunk) {
      inPlace ? C::template direct1<true>(dst + i, nullptr, fin) : C::template direct1<false>(dst + i, src(0) + i, fin);
    }
  } else if (nsrcs == 2) {
    for (std::size_t i = 0; i < end; i += kChunk) {
      inPlace ? C::template direct2<true>(dst + i, nullptr, src(1) + i, fin)
              : C::template direct2<false>(dst + i, src(0) + i, src(1) + i, fin);
    }
  } else {
    reduceTiles<Tr, Op, Fin, false>(dst, srcsRaw, nsrcs, 0, end, fin);
  }

  reducePartial<Tr, Op, Fin>(dst, srcsRaw, nsrcs, end, count - end, fin);
}

// One row of the table a kernel set exports: the kernel of each op on type Tr, null where none applies (bitwise ops
// on floats, avg on bool: the dispatcher refuses those before it looks, and maps bool's sum/max to or, prod/min to
// and).
template <typename Tr>
constexpr std::array<TypedReduce, kNumElementwiseOps> reduceRow() {
  std::array<TypedReduce, kNumElementwiseOps> row{};
  const auto at = [&row](KernelOp op) -> TypedReduce& { return row[static_cast<std::size_t>(op)]; };
  at(KernelOp::kSum) = &reduceTyped<Tr, SumOp<Tr>, NoFinish<Tr>>;
  at(KernelOp::kProd) = &reduceTyped<Tr, ProdOp<Tr>, NoFinish<Tr>>;
  at(KernelOp::kMin) = &reduceTyped<Tr, MinOp<Tr>, NoFinish<Tr>>;
  at(KernelOp::kMax) = &reduceTyped<Tr, MaxOp<Tr>, NoFinish<Tr>>;
  if constexpr (!std::is_same_v<Tr, BoolTraits>) at(KernelOp::kAvg) = &reduceTyped<Tr, SumOp<Tr>, AvgFinish<Tr>>;
  if constexpr (!Tr::kFloat) {
    at(KernelOp::kBand) = &reduceTyped<Tr, AndOp<Tr>, NoFinish<Tr>>;
    at(KernelOp::kBor) = &reduceTyped<Tr, OrOp<Tr>, NoFinish<Tr>>;
    at(KernelOp::kBxor) = &reduceTyped<Tr, XorOp<Tr>, NoFinish<Tr>>;
  }
  return row;
}

// Indexed [type][op]: a call reaches its kernel through one load, where switches on the type and the op cost a small
// reduction as much as its arithmetic.
constexpr ReduceTable makeReduceTable() {
  ReduceTable t{};
  const auto row = [&t](DataType type) -> auto& { return t[static_cast<std::size_t>(type)]; };
  row(DataType::kBool) = reduceRow<BoolTraits>();
  row(DataType::kInt8) = reduceRow<IntTraits<std::int8_t, std::uint8_t>>();
  row(DataType::kUint8) = reduceRow<IntTraits<std::uint8_t, std::uint8_t>>();
  row(DataType::kInt32) = reduceRow<IntTraits<std::int32_t, std::uint32_t>>();
  row(DataType::kUint32) = reduceRow<IntTraits<std::uint32_t, std::uint32_t>>();
  row(DataType::kInt64) = reduceRow<IntTraits<std::int64_t, std::uint64_t>>();
  row(DataType::kUint64) = reduceRow<IntTraits<std::uint64_t, std::uint64_t>>();
  row(DataType::kFloat16) = reduceRow<Float16Traits>();
  row(DataType::kBFloat16) = reduceRow<BFloat16Traits>();
  row(DataType::kFloat32) = reduceRow<FloatTraits<float>>();
  row(DataType::kFloat64) = reduceRow<FloatTraits<double>>();
  row(DataType::kFloat8E4M3) = reduceRow<Float8E4M3Traits>();
  row(DataType::kFloat8E5M2) = reduceRow<Float8E5M2Traits>();
  return t;
}

constinit const ReduceTable kReduceTable = makeReduceTable();

// ---- scaleCopy

struct ScaleArgs {
  float f;
  double d;
  std::uint64_t i;
};

template <typename Tr>
struct ScaleChunk {
  using T = typename Tr::T;

  template <bool kInPlace>
  static void run(T* __restrict dst, const T* __restrict a, const ScaleArgs& s) {
    const T* src = kInPlace ? dst : a;
    if constexpr (std::is_same_v<Tr, Float16Traits>) {  // the product of float16 and float32 is exact in float64
      using L = typename LanesOf<Tr>::Type;
      alignas(64) float w[kChunk];
      for (std::size_t j = 0; j < kChunk; j += L::kWidth) L::storeAcc(w + j, L::load(src + j));
      const double scale = s.f;
      for (std::size_t j = 0; j < kChunk; ++j) dst[j] = doubleToHalfK(static_cast<double>(w[j]) * scale);
    } else if constexpr (sizeof(T) == 2) {  // bfloat16: likewise
      const double scale = s.f;
      for (std::size_t j = 0; j < kChunk; ++j) {
        dst[j] = doubleToBfloat16K(static_cast<double>(Tr::widen(src[j])) * scale);
      }
    } else if constexpr (Tr::kFloat && sizeof(T) == 1) {  // float8: likewise (4 + 24 significant bits)
      const double scale = s.f;
      for (std::size_t j = 0; j < kChunk; ++j) dst[j] = Tr::fromDouble(static_cast<double>(Tr::widen(src[j])) * scale);
    } else if constexpr (Tr::kFloat) {
      const T scale = sizeof(T) == 4 ? static_cast<T>(s.f) : static_cast<T>(s.d);
      for (std::size_t j = 0; j < kChunk; ++j) dst[j] = canonical<Tr>(src[j] * scale);
    } else {
      using U = typename Tr::U;
      const U scale = static_cast<U>(s.i);
      for (std::size_t j = 0; j < kChunk; ++j) dst[j] = static_cast<T>(static_cast<U>(src[j]) * scale);
    }
  }
};

template <>
struct ScaleChunk<BoolTraits> {
  template <bool kInPlace>
  static void run(std::uint8_t* __restrict dst, const std::uint8_t* __restrict a, const ScaleArgs& s) {
    const std::uint8_t* src = kInPlace ? dst : a;
    const std::uint8_t keep = s.i != 0;
    for (std::size_t j = 0; j < kChunk; ++j) dst[j] = static_cast<std::uint8_t>((src[j] != 0) & keep);
  }
};

template <typename Tr>
void scaleTyped(void* dstRaw, const void* srcRaw, std::size_t count, const ScaleArgs& s) {
  using T = typename Tr::T;
  T* dst = static_cast<T*>(dstRaw);
  const T* src = static_cast<const T*>(srcRaw);
  const std::size_t body = count - count % kChunk;
  for (std::size_t i = 0; i < body; i += kChunk) {
    dst == src ? ScaleChunk<Tr>::template run<true>(dst + i, nullptr, s)
               : ScaleChunk<Tr>::template run<false>(dst + i, src + i, s);
  }
  if (const std::size_t rest = count - body; rest != 0) {
    alignas(64) T pad[kChunk];
    padChunk(pad, src + body, rest);
    ScaleChunk<Tr>::template run<true>(pad, nullptr, s);
    __builtin_memcpy(dst + body, pad, rest * sizeof(T));
  }
}

void scaleEntry(void* dst, const void* src, std::size_t count, DataType type, float floatScale, double doubleScale,
                std::uint64_t intScale) {
  const ScaleArgs s{floatScale, doubleScale, intScale};
  switch (type) {
    case DataType::kBool:
      return scaleTyped<BoolTraits>(dst, src, count, s);
    case DataType::kInt8:
      return scaleTyped<IntTraits<std::int8_t, std::uint8_t>>(dst, src, count, s);
    case DataType::kUint8:
      return scaleTyped<IntTraits<std::uint8_t, std::uint8_t>>(dst, src, count, s);
    case DataType::kInt32:
      return scaleTyped<IntTraits<std::int32_t, std::uint32_t>>(dst, src, count, s);
    case DataType::kUint32:
      return scaleTyped<IntTraits<std::uint32_t, std::uint32_t>>(dst, src, count, s);
    case DataType::kInt64:
      return scaleTyped<IntTraits<std::int64_t, std::uint64_t>>(dst, src, count, s);
    case DataType::kUint64:
      return scaleTyped<IntTraits<std::uint64_t, std::uint64_t>>(dst, src, count, s);
    case DataType::kFloat16:
      return scaleTyped<Float16Traits>(dst, src, count, s);
    case DataType::kBFloat16:
      return scaleTyped<BFloat16Traits>(dst, src, count, s);
    case DataType::kFloat32:
      return scaleTyped<FloatTraits<float>>(dst, src, count, s);
    case DataType::kFloat64:
      return scaleTyped<FloatTraits<double>>(dst, src, count, s);
    case DataType::kFloat8E4M3:
      return scaleTyped<Float8E4M3Traits>(dst, src, count, s);
    case DataType::kFloat8E5M2:
      return scaleTyped<Float8E5M2Traits>(dst, src, count, s);
  }
}

}  // namespace
}  // namespace braid::host::detail
