// Scalar float8 <-> float conversions, bit-exact, for every layer and the tests (the CPU reduction kernels keep their
// own copy: see algorithms/host/reduce_conversions_impl.hpp).
// - e4m3 ("fn", as CUDA's __nv_fp8_e4m3 and torch.float8_e4m3fn): sign, 4 exponent bits of bias 7, 3 mantissa bits;
//   no infinities, NaN is S.1111.111, largest finite 448, smallest subnormal 2^-9.
// - e5m2 (CUDA's __nv_fp8_e5m2, torch.float8_e5m2): the top byte of an IEEE float16, with its infinities and NaNs;
//   largest finite 57344, smallest subnormal 2^-16.
// Narrowing rounds to nearest, ties to even, subnormals included, and saturates what lies beyond the largest finite
// magnitude, infinities too, to +-max finite (CUDA's __nv_cvt_float_to_fp8 with __NV_SATFINITE, which braid's GPU
// kernels use). NaN becomes the canonical NaN: 0x7f for e4m3, 0x7e for e5m2, sign cleared. Zero keeps its sign.
#pragma once

#include <bit>
#include <cstdint>

namespace braid {

inline constexpr std::uint8_t kFloat8E4M3NaN = 0x7f;
inline constexpr std::uint8_t kFloat8E5M2NaN = 0x7e;

inline float float8E4M3ToFloat(std::uint8_t b) {
  const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
  const std::uint32_t exp = (b >> 3) & 0xfu;
  const std::uint32_t mant = b & 0x7u;
  if (exp == 0xf && mant == 0x7) return std::bit_cast<float>(sign | 0x7fc00000u);  // the only NaN; no infinities
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 120) << 23) | (mant << 20));
  // Zero or subnormal: mant * 2^-9, exact in float.
  return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(static_cast<float>(mant) * 0x1p-9f));
}

inline float float8E5M2ToFloat(std::uint8_t b) {
  const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
  const std::uint32_t exp = (b >> 2) & 0x1fu;
  const std::uint32_t mant = b & 0x3u;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 21));  // inf / nan (nan stays nan)
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 21));
  return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(static_cast<float>(mant) * 0x1p-16f));
}

inline std::uint8_t floatToFloat8E4M3(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint8_t>((x >> 24) & 0x80u);
  const std::uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return kFloat8E4M3NaN;
  // 448 and above (infinity included) saturate: 448 itself is the largest finite value, and everything above it
  // rounds either to 448 or past it.
  if (absx >= 0x43e00000u) return sign | 0x7eu;
  if (absx < 0x3c800000u) {
    // Below 2^-6 the result is subnormal or zero: adding 2^14, whose last place is 2^-9, makes the FPU round there.
    const float scaled = std::bit_cast<float>(absx) + 16384.0f;
    return sign | static_cast<std::uint8_t>(std::bit_cast<std::uint32_t>(scaled) - 0x46800000u);
  }
  // Normal: rebias the exponent (127 - 7 = 120) and round the 20 dropped mantissa bits to nearest even; a carry
  // out of the mantissa moves to the next exponent, as it should.
  const std::uint32_t odd = (absx >> 20) & 1u;
  return sign | static_cast<std::uint8_t>((absx - (120u << 23) + 0x7ffffu + odd) >> 20);
}

inline std::uint8_t floatToFloat8E5M2(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint8_t>((x >> 24) & 0x80u);
  const std::uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return kFloat8E5M2NaN;
  // 57344 and above (infinity included) saturate: above it a value rounds to 57344 or to infinity.
  if (absx >= 0x47600000u) return sign | 0x7bu;
  if (absx < 0x38800000u) {
    // Below 2^-14: adding 2^7, whose last place is 2^-16, rounds at e5m2's subnormal spacing.
    const float scaled = std::bit_cast<float>(absx) + 128.0f;
    return sign | static_cast<std::uint8_t>(std::bit_cast<std::uint32_t>(scaled) - 0x43000000u);
  }
  // Normal: rebias (127 - 15 = 112) and round the 21 dropped mantissa bits to nearest even.
  const std::uint32_t odd = (absx >> 21) & 1u;
  return sign | static_cast<std::uint8_t>((absx - (112u << 23) + 0xfffffu + odd) >> 21);
}

}  // namespace braid
