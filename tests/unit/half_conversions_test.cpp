// base/half.hpp's float16 and bfloat16 conversions against the compiler's _Float16 (or the portable reference of
// support/reduce_reference.hpp where it has none): every float16, and float32 edges and random values.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/data_type.hpp"
#include "base/half.hpp"
#include "braid/braid.hpp"
#include "support/float8_reference.hpp"
#include "support/isa_levels.hpp"
#include "support/reduce_reference.hpp"
#include "support/reduce_support.hpp"

namespace braid::host {
namespace {

using namespace braid::testing;  // the references (support/reduce_reference.hpp) and the ReduceCpu fixture
namespace fp8 = braid::testing::fp8;

// The reference's float16 -> float, with a NaN's payload kept and quieted as GCC's conversion does.
float referenceHalfToFloat(std::uint16_t h) {
#if defined(__FLT16_MANT_DIG__)
  return static_cast<float>(std::bit_cast<_Float16>(h));
#else
  if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(h & 0x8000) << 16 | 0x7fc00000u |
                                static_cast<std::uint32_t>(h & 0x3ff) << 13);
  }
  return static_cast<float>(halfValue(h));
#endif
}

TEST(HalfConversions, HalfToFloatAllValues) {
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<std::uint16_t>(i);
    const float mine = halfToFloat(h);
    const float gcc = referenceHalfToFloat(h);
    if (std::isnan(gcc)) {
      // GCC quiets signalling NaNs; half.hpp keeps the payload as is. Same sign and payload otherwise.
      ASSERT_TRUE(std::isnan(mine)) << i;
      EXPECT_EQ(std::bit_cast<std::uint32_t>(mine) | 0x00400000u, std::bit_cast<std::uint32_t>(gcc) | 0x00400000u) << i;
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(mine), std::bit_cast<std::uint32_t>(gcc)) << i;
    }
  }
}

void expectFloatToHalf(float f) {
  const std::uint16_t mine = floatToHalf(f);
  const std::uint16_t gcc = halfBitsOf(f);
  if (std::isnan(f)) {
    EXPECT_TRUE((mine & 0x7c00) == 0x7c00 && (mine & 0x3ff) != 0) << std::hex << mine;
    EXPECT_EQ(mine & 0x8000, gcc & 0x8000);
  } else {
    ASSERT_EQ(mine, gcc) << "float bits 0x" << std::hex << std::bit_cast<std::uint32_t>(f);
  }
}

TEST(HalfConversions, FloatToHalfEdgesAndRandom) {
  const float edges[] = {0.0f,
                         -0.0f,
                         65504.0f,
                         65519.99f,
                         65520.0f,
                         -65520.0f,
                         1e9f,
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN(),
                         std::bit_cast<float>(0x7f800001u),  // signalling NaN
                         0x1p-24f,
                         0x1p-25f,    // tie between 0 and the smallest subnormal: 0
                         0x1.8p-25f,  // rounds up to 2^-24
                         0x1p-26f,
                         0x1.ffcp-15f,  // largest subnormal
                         0x1.ffep-15f,  // tie between the largest subnormal and 2^-14
                         0x1p-14f,
                         1.0f + 0x1p-11f,    // ties to even: 1.0
                         1.0f + 0x1.8p-10f,  // ties to even: up
                         std::numeric_limits<float>::denorm_min(),
                         std::numeric_limits<float>::min(),
                         std::numeric_limits<float>::max()};
  for (float f : edges) expectFloatToHalf(f);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> inRange(-70000.0f, 70000.0f);
  std::uniform_int_distribution<int> exponent(-30, 17);
  for (int k = 0; k < 1000000; ++k) {
    expectFloatToHalf(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));  // every exponent
    expectFloatToHalf(inRange(rng));
    expectFloatToHalf(std::ldexp(inRange(rng) / 70000.0f, exponent(rng)));  // the subnormal and rounding boundaries
    // Exact ties: a half value plus half of its last place.
    const auto h = static_cast<std::uint16_t>(rng() & 0x7bff);
    const float tie =
        static_cast<float>(halfValue(h) + (halfValue(static_cast<std::uint16_t>(h + 1)) - halfValue(h)) / 2);
    expectFloatToHalf(tie);
  }
}

TEST(HalfConversions, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie: down to even
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie: up to even
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x7f7f8000u)), 0x7f80);  // tie above the largest: inf
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(floatToBfloat16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x00008000u)), 0x0000);  // subnormal tie: even
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x00018000u)), 0x0002);
  const std::uint16_t nan = floatToBfloat16(std::bit_cast<float>(0x7f800001u));  // signalling NaN stays NaN
  EXPECT_TRUE((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0) << std::hex << nan;
  for (std::uint32_t b = 0; b < 65536; ++b) {  // bfloat16 -> float is exact
    const float f = bfloat16ToFloat(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(floatToBfloat16(f), b);
  }
  std::mt19937 rng(8);
  for (int k = 0; k < 1000000; ++k) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(floatToBfloat16(f), bf16BitsOf(f)) << std::hex << std::bit_cast<std::uint32_t>(f);
  }
}

}  // namespace
}  // namespace braid::host
