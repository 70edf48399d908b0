// The scalar conversions of the CPU reduction kernels (float16, bfloat16 and float8 to and from float32, and from
// float64 with one rounding), and the bit casts they rest on: the same bits as base/half.hpp and base/float8.hpp,
// written branch-free so that the kernels' loops over them vectorise. Part of reduce_kernels_impl.hpp, which
// includes it: everything here has internal linkage for the reasons its ODR note gives (one private copy per ISA
// translation unit), and the tests check these copies against base/'s bit for bit.
#pragma once

#include <cstdint>

namespace braid::host::detail {
namespace {

template <typename To, typename From>
inline To bitCast(From from) {
  static_assert(sizeof(To) == sizeof(From));
  return __builtin_bit_cast(To, from);
}

constexpr float kFloatNaN = __builtin_nanf("");   // 0x7fc00000
constexpr double kDoubleNaN = __builtin_nan("");  // 0x7ff8000000000000

// ---- float16 / bfloat16 conversions: the same bits as base/half.hpp (see the ODR note in reduce_kernels_impl.hpp),
// written with mask selects instead of branches: GCC will not if-convert the ternary form (it refuses to speculate the
// float add under -ftrapping-math), and then the loops over them do not vectorise.

// c ? a : b without a branch.
inline std::uint32_t select(bool c, std::uint32_t a, std::uint32_t b) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(c);
  return (a & mask) | (b & ~mask);
}
inline std::uint64_t select(bool c, std::uint64_t a, std::uint64_t b) {
  const std::uint64_t mask = 0u - static_cast<std::uint64_t>(c);
  return (a & mask) | (b & ~mask);
}

inline float halfToFloatK(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::int32_t em = h & 0x7fff;  // exponent and mantissa
  const std::uint32_t normal = (static_cast<std::uint32_t>(em) << 13) + (112u << 23);
  const std::uint32_t infNan = (static_cast<std::uint32_t>(em) << 13) | 0x7f800000u;
  // Zero or subnormal: mantissa * 2^-24, exact in float.
  const std::uint32_t sub = bitCast<std::uint32_t>(static_cast<float>(em) * 5.9604644775390625e-8f);
  return bitCast<float>(sign | select(em >= 0x7c00, infNan, select(em >= 0x400, normal, sub)));
}

inline std::uint16_t floatToHalfK(float f) {
  const std::uint32_t x = bitCast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t absx = x & 0x7fffffffu;
  const auto sabs = static_cast<std::int32_t>(absx);  // signed compares: SSE2 has no unsigned ones
  const std::uint32_t nan = 0x7e00u | ((absx >> 13) & 0x3ffu);
  // Below 2^-14 the result is subnormal or zero: adding 0.5 makes the FPU round at 2^-24, half's last place.
  const std::uint32_t sub = bitCast<std::uint32_t>(bitCast<float>(absx) + 0.5f) - 0x3f000000u;
  // Normal: rebias the exponent (-112 << 23) and round the 13 dropped mantissa bits to nearest even.
  const std::uint32_t normal = (absx + 0xc8000fffu + ((absx >> 13) & 1u)) >> 13;
  const std::uint32_t magnitude = select(sabs > 0x7f800000, nan,
                                         select(sabs >= 0x477ff000, 0x7c00u,  // rounds to >= 65520: inf
                                                select(sabs < 0x38800000, sub, normal)));
  return static_cast<std::uint16_t>(sign | magnitude);
}

inline float bfloat16ToFloatK(std::uint16_t b) { return bitCast<float>(static_cast<std::uint32_t>(b) << 16); }

// Rounds to nearest even. The kernels canonicalise NaN before narrowing, and the canonical 0x7fc00000 rounds to
// bfloat16's canonical 0x7fc0, so unlike base/half.hpp this needs no NaN case (other NaNs could round to inf).
inline std::uint16_t floatToBfloat16K(float f) {
  const std::uint32_t x = bitCast<std::uint32_t>(f);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// float64 -> float16 / bfloat16 with a single rounding to nearest even (scaleCopy's exact float64 products).
// Same scheme as floatToHalfK on the float64 layout; NaN becomes the canonical quiet NaN.
inline std::uint16_t doubleToHalfK(double d) {
  const std::uint64_t x = bitCast<std::uint64_t>(d);
  const std::uint64_t sign = (x >> 48) & 0x8000u;
  const std::uint64_t absx = x & 0x7fffffffffffffffull;
  // 2^28 has its last place at 2^-24: adding it rounds a value below 2^-14 to a float16 subnormal.
  const std::uint64_t sub = bitCast<std::uint64_t>(bitCast<double>(absx) + 268435456.0) - 0x41b0000000000000ull;
  // Rebias (1023 - 15 = 1008) and round the 42 dropped mantissa bits to nearest even.
  const std::uint64_t normal = (absx - (1008ull << 52) + 0x1ffffffffffull + ((absx >> 42) & 1u)) >> 42;
  const auto sabs = static_cast<std::int64_t>(absx);
  const bool nan = sabs > 0x7ff0000000000000;
  const std::uint64_t magnitude = select(nan, std::uint64_t{0x7e00},
                                         select(sabs >= 0x40effe0000000000,  // 65520: rounds to inf
                                                std::uint64_t{0x7c00}, select(sabs < 0x3f10000000000000, sub, normal)));
  // The canonical NaN is positive: drop the sign of a NaN, as every other kernel does.
  return static_cast<std::uint16_t>(select(nan, std::uint64_t{0}, sign) | magnitude);
}

inline std::uint16_t doubleToBfloat16K(double d) {
  const std::uint64_t x = bitCast<std::uint64_t>(d);
  const std::uint64_t sign = (x >> 48) & 0x8000u;
  const std::uint64_t absx = x & 0x7fffffffffffffffull;
  // 2^-81 has its last place at 2^-133, bfloat16's smallest subnormal.
  const std::uint64_t sub = bitCast<std::uint64_t>(bitCast<double>(absx) + 0x1p-81) - 0x3ae0000000000000ull;
  // Rebias (1023 - 127 = 896) and round the 45 dropped mantissa bits to nearest even.
  const std::uint64_t normal = (absx - (896ull << 52) + 0xfffffffffffull + ((absx >> 45) & 1u)) >> 45;
  const auto sabs = static_cast<std::int64_t>(absx);
  const bool nan = sabs > 0x7ff0000000000000;
  const std::uint64_t magnitude = select(nan, std::uint64_t{0x7fc0},
                                         select(sabs >= 0x47eff00000000000,  // (2 - 2^-8) * 2^127: rounds to inf
                                                std::uint64_t{0x7f80}, select(sabs < 0x3810000000000000, sub, normal)));
  return static_cast<std::uint16_t>(select(nan, std::uint64_t{0}, sign) | magnitude);
}

// ---- float8 conversions: the same bits as base/float8.hpp (see the ODR note in reduce_kernels_impl.hpp),
// branch-free as above. Narrowing rounds to nearest even and saturates beyond the largest finite value (infinity
// included) to +-max finite, as CUDA's __NV_SATFINITE conversion does on the GPU; NaN becomes the canonical positive
// NaN (e4m3 0x7f, e5m2 0x7e).

// Zero and subnormals widen as mantissa * 2^-9 (e4m3) or 2^-16 (e5m2), normal floats both, so a process that set
// the CPU to treat subnormal operands as zero (DAZ) still gets them right.
inline float float8E4M3ToFloatK(std::uint8_t b) {
  const std::uint32_t em = b & 0x7fu;  // exponent and mantissa
  const std::uint32_t normal = (em << 20) + (120u << 23);
  const std::uint32_t sub = bitCast<std::uint32_t>(static_cast<float>(em) * 0x1p-9f);
  const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
  // S.1111.111 is e4m3's only NaN; it has no infinities.
  return bitCast<float>(sign | select(em == 0x7f, 0x7fc00000u, select(em >= 0x08, normal, sub)));
}

inline float float8E5M2ToFloatK(std::uint8_t b) {
  const std::uint32_t em = b & 0x7fu;
  const std::uint32_t normal = (em << 21) + (112u << 23);
  const std::uint32_t infNan = (em << 21) | 0x7f800000u;
  const std::uint32_t sub = bitCast<std::uint32_t>(static_cast<float>(em) * 0x1p-16f);
  const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
  return bitCast<float>(sign | select(em >= 0x7c, infNan, select(em >= 0x04, normal, sub)));
}

inline std::uint8_t floatToFloat8E4M3K(float f) {
  const std::uint32_t x = bitCast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 24) & 0x80u;
  const std::uint32_t absx = x & 0x7fffffffu;
  const auto sabs = static_cast<std::int32_t>(absx);
  // Below 2^-6 the result is subnormal or zero: adding 2^14 makes the FPU round at 2^-9, e4m3's last place.
  const std::uint32_t sub = bitCast<std::uint32_t>(bitCast<float>(absx) + 16384.0f) - 0x46800000u;
  // Normal: rebias the exponent (-120 << 23) and round the 20 dropped mantissa bits to nearest even.
  const std::uint32_t normal = (absx - (120u << 23) + 0x7ffffu + ((absx >> 20) & 1u)) >> 20;
  const bool nan = sabs > 0x7f800000;
  const std::uint32_t magnitude = select(nan, std::uint32_t{0x7f},
                                         select(sabs >= 0x43e00000, std::uint32_t{0x7e},  // >= 448: saturate
                                                select(sabs < 0x3c800000, sub, normal)));
  return static_cast<std::uint8_t>(select(nan, 0u, sign) | magnitude);
}

inline std::uint8_t floatToFloat8E5M2K(float f) {
  const std::uint32_t x = bitCast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 24) & 0x80u;
  const std::uint32_t absx = x & 0x7fffffffu;
  const auto sabs = static_cast<std::int32_t>(absx);
  // Below 2^-14: adding 2^7 rounds at 2^-16, e5m2's last place.
  const std::uint32_t sub = bitCast<std::uint32_t>(bitCast<float>(absx) + 128.0f) - 0x43000000u;
  // Normal: rebias (-112 << 23) and round the 21 dropped mantissa bits to nearest even.
  const std::uint32_t normal = (absx - (112u << 23) + 0xfffffu + ((absx >> 21) & 1u)) >> 21;
  const bool nan = sabs > 0x7f800000;
  const std::uint32_t magnitude = select(nan, std::uint32_t{0x7e},
                                         select(sabs >= 0x47600000, std::uint32_t{0x7b},  // >= 57344: saturate
                                                select(sabs < 0x38800000, sub, normal)));
  return static_cast<std::uint8_t>(select(nan, 0u, sign) | magnitude);
}

// float64 -> float8 with a single rounding (scaleCopy's exact float64 products), same scheme on float64's layout.
inline std::uint8_t doubleToFloat8E4M3K(double d) {
  const std::uint64_t x = bitCast<std::uint64_t>(d);
  const std::uint64_t sign = (x >> 56) & 0x80u;
  const std::uint64_t absx = x & 0x7fffffffffffffffull;
  // 2^43 has its last place at 2^-9.
  const std::uint64_t sub = bitCast<std::uint64_t>(bitCast<double>(absx) + 0x1p43) - 0x42a0000000000000ull;
  // Rebias (1023 - 7 = 1016) and round the 49 dropped mantissa bits to nearest even.
  const std::uint64_t normal = (absx - (1016ull << 52) + 0xffffffffffffull + ((absx >> 49) & 1u)) >> 49;
  const auto sabs = static_cast<std::int64_t>(absx);
  const bool nan = sabs > 0x7ff0000000000000;
  const std::uint64_t magnitude = select(nan, std::uint64_t{0x7f},
                                         select(sabs >= 0x407c000000000000,  // >= 448: saturate
                                                std::uint64_t{0x7e}, select(sabs < 0x3f90000000000000, sub, normal)));
  return static_cast<std::uint8_t>(select(nan, std::uint64_t{0}, sign) | magnitude);
}

inline std::uint8_t doubleToFloat8E5M2K(double d) {
  const std::uint64_t x = bitCast<std::uint64_t>(d);
  const std::uint64_t sign = (x >> 56) & 0x80u;
  const std::uint64_t absx = x & 0x7fffffffffffffffull;
  // 2^36 has its last place at 2^-16.
  const std::uint64_t sub = bitCast<std::uint64_t>(bitCast<double>(absx) + 0x1p36) - 0x4230000000000000ull;
  // Rebias (1023 - 15 = 1008) and round the 50 dropped mantissa bits to nearest even.
  const std::uint64_t normal = (absx - (1008ull << 52) + 0x1ffffffffffffull + ((absx >> 50) & 1u)) >> 50;
  const auto sabs = static_cast<std::int64_t>(absx);
  const bool nan = sabs > 0x7ff0000000000000;
  const std::uint64_t magnitude = select(nan, std::uint64_t{0x7e},
                                         select(sabs >= 0x40ec000000000000,  // >= 57344: saturate
                                                std::uint64_t{0x7b}, select(sabs < 0x3f10000000000000, sub, normal)));
  return static_cast<std::uint8_t>(select(nan, std::uint64_t{0}, sign) | magnitude);
}

}  // namespace
}  // namespace braid::host::detail
