// BRAID_COMPRESS's wire kernels (algorithms/host/net/net_compressed.cpp): float32 <-> bfloat16 and the compressed
// ring's fused steps, written once and compiled three times with the reduction kernels. Include it right after
// reduce_kernels_impl.hpp (whose primitives and ODR rules it shares: everything here has internal linkage too),
// from the three kernel-set translation units only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/host/reduce_kernels_impl.hpp"

namespace braid::host::detail {
namespace {

// ---- BRAID_COMPRESS's wire: float32 <-> bfloat16, the same bits as base/half.hpp's floatToBfloat16 (nearest even;
// a NaN keeps its top bits and is made quiet) and bfloat16ToFloat. Chunks of a fixed trip count, as above, so that
// -O2 vectorises them; the tail runs the same per-element code.
inline std::uint16_t wireBfloat16K(float f) {
  const std::uint32_t x = bitCast<std::uint32_t>(f);
  const auto sabs = static_cast<std::int32_t>(x & 0x7fffffffu);  // signed compares: SSE2 has no unsigned ones
  const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>(select(sabs > 0x7f800000, (x >> 16) | 0x40u, rounded));
}

void toBfloat16Entry(std::uint16_t* __restrict dst, const float* __restrict src, std::size_t count) {
  std::size_t i = 0;
  for (; i + kChunk <= count; i += kChunk) {
    for (std::size_t k = 0; k < kChunk; ++k) dst[i + k] = wireBfloat16K(src[i + k]);
  }
  for (; i < count; ++i) dst[i] = wireBfloat16K(src[i]);
}

void fromBfloat16Entry(float* __restrict dst, const std::uint16_t* __restrict src, std::size_t count) {
  std::size_t i = 0;
  for (; i + kChunk <= count; i += kChunk) {
    for (std::size_t k = 0; k < kChunk; ++k) dst[i + k] = bfloat16ToFloatK(src[i + k]);
  }
  for (; i < count; ++i) dst[i] = bfloat16ToFloatK(src[i]);
}

// ---- The compressed ring's fused steps: reduceSources' float32 sum of a and the widened b (AvgFinish's division,
// then the canonical NaN), rounded by wireBfloat16K, in one pass. Chunks again; finishBfloat16 rounds a chunk into a
// local array before it writes dst, so dst may be a (an in-place allreduce).
template <bool kAvg>
inline float wireSumK(float a, std::uint16_t b, float divisor) {
  float s = a + bfloat16ToFloatK(b);
  if constexpr (kAvg) s = s / divisor;
  return bitCast<float>(select(s != s, bitCast<std::uint32_t>(kFloatNaN), bitCast<std::uint32_t>(s)));
}

void sumToBfloat16Entry(std::uint16_t* __restrict wire, const float* __restrict a, const std::uint16_t* __restrict b,
                        std::size_t count) {
  std::size_t i = 0;
  for (; i + kChunk <= count; i += kChunk) {
    for (std::size_t k = 0; k < kChunk; ++k) wire[i + k] = wireBfloat16K(wireSumK<false>(a[i + k], b[i + k], 1.0f));
  }
  for (; i < count; ++i) wire[i] = wireBfloat16K(wireSumK<false>(a[i], b[i], 1.0f));
}

template <bool kAvg>
void finishBfloat16Typed(float* dst, std::uint16_t* __restrict wire, const float* a, const std::uint16_t* __restrict b,
                         std::size_t count, float divisor) {
  alignas(64) std::uint16_t rounded[kChunk];
  for (std::size_t i = 0; i < count; i += kChunk) {
    const std::size_t n = count - i < kChunk ? count - i : kChunk;
    if (n == kChunk) {
      for (std::size_t k = 0; k < kChunk; ++k) rounded[k] = wireBfloat16K(wireSumK<kAvg>(a[i + k], b[i + k], divisor));
      for (std::size_t k = 0; k < kChunk; ++k) wire[i + k] = rounded[k];
      for (std::size_t k = 0; k < kChunk; ++k) dst[i + k] = bfloat16ToFloatK(rounded[k]);
    } else {
      for (std::size_t k = 0; k < n; ++k) rounded[k] = wireBfloat16K(wireSumK<kAvg>(a[i + k], b[i + k], divisor));
      for (std::size_t k = 0; k < n; ++k) {
        wire[i + k] = rounded[k];
        dst[i + k] = bfloat16ToFloatK(rounded[k]);
      }
    }
  }
}

void finishBfloat16Entry(float* dst, std::uint16_t* wire, const float* a, const std::uint16_t* b, std::size_t count,
                         float avgDivisor) {
  if (avgDivisor == 1.0f) return finishBfloat16Typed<false>(dst, wire, a, b, count, 1.0f);
  finishBfloat16Typed<true>(dst, wire, a, b, count, avgDivisor);
}

}  // namespace
}  // namespace braid::host::detail
