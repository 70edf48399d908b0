// The float8 conversions: base/float8.hpp and the CPU kernels' own copy (algorithms/host/reduce_conversions_impl.hpp)
// against the definition (support/float8_reference.hpp) and against each other, bit for bit: every code, every
// rounding boundary, and a large spread of other float32 and float64 inputs. The kernels' header is included here as
// the ISA units include it; its code has internal linkage, so this is one more private copy of it, compiled for the
// baseline ISA (reduce_cpu_test.cpp runs every ISA's copy through reduceSources and scaleCopy).
#include "base/float8.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algorithms/host/reduce_kernels_impl.hpp"
#include "support/float8_reference.hpp"

namespace braid {
namespace {

namespace fp8 = braid::testing::fp8;

// One type's conversions, both copies.
struct Conversions {
  DataType type;
  const fp8::Format& format;
  float (*widen)(std::uint8_t);
  std::uint8_t (*narrow)(float);
  float (*widenKernel)(std::uint8_t);
  std::uint8_t (*narrowKernel)(float);
  std::uint8_t (*narrowKernelDouble)(double);
};

const Conversions kTypes[] = {
    {DataType::kFloat8E4M3, fp8::kE4M3, &float8E4M3ToFloat, &floatToFloat8E4M3, &host::detail::float8E4M3ToFloatK,
     &host::detail::floatToFloat8E4M3K, &host::detail::doubleToFloat8E4M3K},
    {DataType::kFloat8E5M2, fp8::kE5M2, &float8E5M2ToFloat, &floatToFloat8E5M2, &host::detail::float8E5M2ToFloatK,
     &host::detail::floatToFloat8E5M2K, &host::detail::doubleToFloat8E5M2K},
};

std::string hexOf(std::uint32_t bits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", bits);
  return buf;
}

TEST(Float8Conversions, WidenEveryCodeExactly) {
  for (const Conversions& c : kTypes) {
    SCOPED_TRACE(dataTypeName(c.type));
    for (int code = 0; code < 256; ++code) {
      const auto b = static_cast<std::uint8_t>(code);
      const double want = fp8::decode(c.format, b);
      for (float got : {c.widen(b), c.widenKernel(b)}) {
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << code;
        } else {
          // Exact, the sign of zero included.
          EXPECT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(static_cast<float>(want))) << code;
          EXPECT_EQ(static_cast<double>(got), want) << code;
        }
      }
    }
  }
}

TEST(Float8Conversions, EveryCodeRoundTrips) {
  for (const Conversions& c : kTypes) {
    SCOPED_TRACE(dataTypeName(c.type));
    int nans = 0;
    for (int code = 0; code < 256; ++code) {
      const auto b = static_cast<std::uint8_t>(code);
      const bool nan = fp8::isNaNCode(c.format, b);
      nans += nan;
      // Every NaN comes back canonical (positive, one pattern); e5m2's infinities saturate to +-57344.
      const bool inf = std::isinf(fp8::decode(c.format, b));
      const std::uint8_t want = nan ? c.format.nan : inf ? static_cast<std::uint8_t>((b & 0x80) | 0x7b) : b;
      EXPECT_EQ(c.narrow(c.widen(b)), want) << code;
      EXPECT_EQ(c.narrowKernel(c.widenKernel(b)), want) << code;
      EXPECT_EQ(c.narrowKernelDouble(static_cast<double>(c.widen(b))), want) << code;
    }
    EXPECT_EQ(nans, c.type == DataType::kFloat8E4M3 ? 2 : 6);  // e4m3: 0x7f, 0xff; e5m2: 0x7d..0x7f, 0xfd..0xff
  }
}

void expectNarrowsLikeTheDefinition(const Conversions& c, float x) {
  const std::uint8_t want = fp8::encode(c.format, x);
  ASSERT_EQ(c.narrow(x), want) << "float " << x << " bits " << hexOf(std::bit_cast<std::uint32_t>(x));
  ASSERT_EQ(c.narrowKernel(x), want) << "kernel copy, float " << x << " bits "
                                     << hexOf(std::bit_cast<std::uint32_t>(x));
  ASSERT_EQ(c.narrowKernelDouble(x), want) << "kernel copy from float64, " << x;
}

TEST(Float8Conversions, NarrowAtEveryRoundingBoundary) {
  for (const Conversions& c : kTypes) {
    SCOPED_TRACE(dataTypeName(c.type));
    const std::vector<float> xs = fp8::roundingBoundaries(c.format);
    EXPECT_GT(xs.size(), 2000u);
    for (float x : xs) expectNarrowsLikeTheDefinition(c, x);
  }
}

// The rules, spelled out on the values that show them.
TEST(Float8Conversions, RoundsToNearestEvenSaturatesAndCanonicalisesNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // e4m3: 1 = 0x38, 1.125 = 0x39, 1.25 = 0x3a; max 448 = 0x7e; min subnormal 2^-9 = 0x01.
  EXPECT_EQ(floatToFloat8E4M3(1.0625f), 0x38);                        // tie: down to the even mantissa
  EXPECT_EQ(floatToFloat8E4M3(std::nextafter(1.0625f, 2.0f)), 0x39);  // just above the tie: up
  EXPECT_EQ(floatToFloat8E4M3(1.1875f), 0x3a);                        // tie: up to the even mantissa
  EXPECT_EQ(floatToFloat8E4M3(std::nextafter(1.1875f, 0.0f)), 0x39);  // just below the tie: down
  EXPECT_EQ(floatToFloat8E4M3(448.0f), 0x7e);
  EXPECT_EQ(floatToFloat8E4M3(464.0f), 0x7e);  // halfway to where 480 would be: 448, even
  EXPECT_EQ(floatToFloat8E4M3(1e6f), 0x7e);    // saturates
  EXPECT_EQ(floatToFloat8E4M3(-1e6f), 0xfe);
  EXPECT_EQ(floatToFloat8E4M3(inf), 0x7e);  // e4m3 has no infinity: +-inf saturates too, as CUDA's satfinite
  EXPECT_EQ(floatToFloat8E4M3(-inf), 0xfe);
  EXPECT_EQ(floatToFloat8E4M3(nan), 0x7f);
  EXPECT_EQ(floatToFloat8E4M3(-nan), 0x7f);      // canonical: sign cleared
  EXPECT_EQ(floatToFloat8E4M3(0x1p-10f), 0x00);  // tie between 0 and the smallest subnormal: 0
  EXPECT_EQ(floatToFloat8E4M3(std::nextafter(0x1p-10f, 1.0f)), 0x01);
  EXPECT_EQ(floatToFloat8E4M3(0x1.8p-9f), 0x02);  // tie between subnormals 1 and 2: 2
  EXPECT_EQ(floatToFloat8E4M3(0x1.ep-7f), 0x08);  // the largest subnormal's tie with 2^-6 rounds up to 2^-6
  EXPECT_EQ(floatToFloat8E4M3(-0.0f), 0x80);
  EXPECT_EQ(floatToFloat8E4M3(-1e-30f), 0x80);  // underflow keeps the sign
  // e5m2: 1 = 0x3c, 1.25 = 0x3d, 1.5 = 0x3e; max 57344 = 0x7b; inf 0x7c; min subnormal 2^-16 = 0x01.
  EXPECT_EQ(floatToFloat8E5M2(1.125f), 0x3c);
  EXPECT_EQ(floatToFloat8E5M2(1.375f), 0x3e);
  EXPECT_EQ(floatToFloat8E5M2(57344.0f), 0x7b);
  EXPECT_EQ(floatToFloat8E5M2(61440.0f), 0x7b);  // would round to inf: saturates
  EXPECT_EQ(floatToFloat8E5M2(inf), 0x7b);       // inf saturates as well (CUDA's __NV_SATFINITE)
  EXPECT_EQ(floatToFloat8E5M2(-inf), 0xfb);
  EXPECT_EQ(floatToFloat8E5M2(nan), 0x7e);
  EXPECT_EQ(floatToFloat8E5M2(-nan), 0x7e);
  EXPECT_EQ(floatToFloat8E5M2(0x1p-17f), 0x00);
  EXPECT_EQ(floatToFloat8E5M2(0x1.8p-16f), 0x02);
  EXPECT_EQ(floatToFloat8E5M2(-0.0f), 0x80);
  // Reading: e5m2's infinities stay infinite, every NaN reads as NaN.
  EXPECT_EQ(float8E5M2ToFloat(0x7c), inf);
  EXPECT_EQ(float8E5M2ToFloat(0xfc), -inf);
  EXPECT_TRUE(std::isnan(float8E5M2ToFloat(0xfd)));
  EXPECT_TRUE(std::isnan(float8E4M3ToFloat(0xff)));
  EXPECT_EQ(float8E4M3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(float8E4M3ToFloat(0x01), 0x1p-9f);
  EXPECT_EQ(float8E5M2ToFloat(0x01), 0x1p-16f);
}

// Both copies agree on a strided sweep of all float32 bit patterns (every exponent, sign and NaN kind), and with
// the definition on random floats and doubles.
TEST(Float8Conversions, CopiesAgreeEverywhere) {
  for (const Conversions& c : kTypes) {
    SCOPED_TRACE(dataTypeName(c.type));
    for (std::uint64_t bits = 0; bits <= 0xffffffffu; bits += 251) {
      const float x = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
      const std::uint8_t base = c.narrow(x);
      if (c.narrowKernel(x) != base || c.narrowKernelDouble(x) != base) {
        FAIL() << "float bits " << hexOf(static_cast<std::uint32_t>(bits)) << ": base " << int{base} << " kernel "
               << int{c.narrowKernel(x)} << " kernel from float64 " << int{c.narrowKernelDouble(x)};
      }
    }
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> unit(-1, 1);
    std::uniform_int_distribution<int> exponent(-22, 18);
    for (int k = 0; k < 300000; ++k) {
      expectNarrowsLikeTheDefinition(c, std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
      expectNarrowsLikeTheDefinition(c, static_cast<float>(std::ldexp(unit(rng), exponent(rng))));
      // float64 inputs (scaleCopy's products): a single rounding, never through float32.
      const double d = std::ldexp(unit(rng), exponent(rng));
      ASSERT_EQ(c.narrowKernelDouble(d), fp8::encode(c.format, d)) << "float64 " << d;
    }
    // float64 values a hair off each midpoint: rounding through float32 first would land on the midpoint.
    for (int code = 0; code < 127; ++code) {
      const double v = fp8::decode(c.format, static_cast<std::uint8_t>(code));
      const double next = fp8::decode(c.format, static_cast<std::uint8_t>(code + 1));
      if (!std::isfinite(next)) break;
      const double mid = (v + next) / 2;
      for (double d : {std::nextafter(mid, 0.0), mid, std::nextafter(mid, 1e9)}) {
        ASSERT_EQ(c.narrowKernelDouble(d), fp8::encode(c.format, d)) << "float64 " << d;
        ASSERT_EQ(c.narrowKernelDouble(-d), fp8::encode(c.format, -d)) << "float64 " << -d;
      }
    }
  }
}

// This copy's kernels end to end: every pair of codes summed, and ones scaled at the boundaries, against
// base/float8.hpp's conversions around float32 arithmetic.
TEST(Float8Conversions, KernelsOfThisCopyMatchTheBaseConversions) {
  for (const Conversions& c : kTypes) {
    SCOPED_TRACE(dataTypeName(c.type));
    std::vector<std::uint8_t> a(65536), b(65536), sum(65536);
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<std::uint8_t>(i >> 8);
      b[i] = static_cast<std::uint8_t>(i);
    }
    const void* srcs[2] = {a.data(), b.data()};
    for (bool stream : {false, true}) {
      host::detail::kReduceTable[static_cast<std::size_t>(c.type)][static_cast<std::size_t>(
          host::detail::KernelOp::kSum)](sum.data(), srcs, 2, a.size(), 1, stream);
      for (std::size_t i = 0; i < a.size(); ++i) {
        const float s = c.widen(a[i]) + c.widen(b[i]);
        ASSERT_EQ(sum[i], c.narrow(s)) << "codes " << int{a[i]} << " + " << int{b[i]} << " stream " << stream;
      }
    }
    const std::uint8_t one[8] = {c.narrow(1.0f)};
    for (float scale : fp8::roundingBoundaries(c.format)) {
      std::uint8_t out[8] = {};  // room for any type's element: the compiler sees every case of the dispatch
      host::detail::scaleEntry(out, one, 1, c.type, scale, scale, 0);
      ASSERT_EQ(out[0], fp8::encode(c.format, scale)) << "scale " << scale;
    }
  }
}

}  // namespace
}  // namespace braid
