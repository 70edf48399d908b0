// Scalar float16 / bfloat16 <-> float conversions, bit-exact with IEEE round-to-nearest-even.
// Branch-light so that loops over them vectorise; header-only so every layer (and tests) can use them.
#pragma once

#include <bit>
#include <cstdint>

namespace braid {

inline float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24, exact in float.
  const float magnitude = static_cast<float>(mant) * 5.9604644775390625e-8f;
  return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
}

inline std::uint16_t floatToHalf(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan (keep nan quiet and non-zero)
    return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0u);
  }
  if (absx >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (absx < 0x38800000u) {
    // Result is subnormal or zero: let the FPU round by adding a magic number (2^-14 * 0.5 scale trick).
    const float magic = std::bit_cast<float>(0x3f000000u);  // 0.5
    const float scaled = std::bit_cast<float>(absx) + magic;
    return sign | static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(scaled) - 0x3f000000u);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  const std::uint32_t odd = (absx >> 13) & 1u;
  const std::uint32_t rounded = absx + 0xc8000fffu + odd;  // -(112 << 23) + 0xfff
  return sign | static_cast<std::uint16_t>(rounded >> 13);
}

inline float bfloat16ToFloat(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

inline std::uint16_t floatToBfloat16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet nan
  const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>((x + rounding) >> 16);
}

}  // namespace braid
