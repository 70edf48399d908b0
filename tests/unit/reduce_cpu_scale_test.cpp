// scaleCopy (premultiplied sums) and the float8 types under every kernel set, against references computed from
// scratch (support/reduce_reference.hpp, support/float8_reference.hpp), and the arguments the kernels refuse.
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

#include "algorithms/host/reduce_cpu.hpp"
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

// ---- scaleCopy

std::uint64_t wrapScaleReference(double scale) {  // scale modulo 2^64 through 128-bit integers
  const auto wide = static_cast<__int128>(scale >= 0 ? std::fmod(scale, 0x1p64) : -std::fmod(-scale, 0x1p64));
  return static_cast<std::uint64_t>(static_cast<unsigned __int128>(wide));
}

TEST_F(ReduceCpu, ScaleCopyEveryType) {
  std::mt19937_64 rng(6);
  std::uniform_real_distribution<double> uni(-100, 100);
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (DataType type : kAllTypes) {
      const std::vector<double> scales = isFloating(type)
                                             ? std::vector<double>{0.5, 3.0, -1.25, 1.0 / 3.0, 1e-6, 7e4, 0.0}
                                             : std::vector<double>{3, -2, 300, 0x1p40 + 1, -0x1p63, 1e20, 0};
      for (double scale : scales) {
        for (std::size_t count : {1, 63, 1000}) {
          SCOPED_TRACE(isa + " " + dataTypeName(type) + " scale=" + std::to_string(scale) +
                       " count=" + std::to_string(count));
          Buffer src(type, count), want(type, count);
          for (std::size_t i = 0; i < count; ++i) {
            if (isFloating(type)) {
              src.putF(i, i % 17 == 0 ? uni(rng) * 1e-6 : uni(rng));
            } else {
              src.putI(i, rng());
            }
          }
          for (std::size_t i = 0; i < count; ++i) {
            if (type == DataType::kBool) {
              want.putI(i, src.getI(i) != 0 && scale != 0);
            } else if (isInteger(type)) {
              want.putI(i, static_cast<std::uint64_t>(src.getI(i)) * wrapScaleReference(scale));
            } else if (type == DataType::kFloat64) {
              want.putF(i, src.getF(i) * scale);
            } else {
              // Exact product with the float32-rounded scale, rounded once to the type.
              want.putF(i, src.getF(i) * static_cast<double>(static_cast<float>(scale)));
            }
          }
          Buffer got(type, count);
          scaleCopy(got.data(), src.data(), count, type, scale);
          EXPECT_TRUE(got.sameBits(want));
          scaleCopy(src.data(), src.data(), count, type, scale);  // in place
          EXPECT_TRUE(src.sameBits(want));
        }
      }
    }
  }
}

// scaleCopy of ones by f rounds f itself once: every rounding boundary of float16 and bfloat16, reached from
// float64 products.
TEST_F(ReduceCpu, ScaleCopyRoundsOnceAtEdges) {
  const std::vector<float> scales = halfRoundingScales(20000);
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
      Buffer ones(type, 1), out(type, 1);
      ones.putF(0, 1.0);
      for (float f : scales) {
        for (float s : {f, -f}) {
          scaleCopy(out.data(), ones.data(), 1, type, s);
          const std::uint16_t want = type == DataType::kFloat16 ? halfBitsOf(s) : bf16BitsOf(s);
          ASSERT_EQ(out.get<std::uint16_t>(0), want)
              << isa << " " << dataTypeName(type) << " scale bits 0x" << std::hex << std::bit_cast<std::uint32_t>(s);
        }
      }
    }
  }
}

// ---- float8: every op on every code, against the definition: each source widened to float32 (exactly), combined
// in source order in float32 (min and max by the NaN rule), avg divided once by the divisor in float32, the result
// rounded once to the type (support/float8_reference.hpp).

std::uint8_t float8Reference(DataType type, ReduceKind kind, const std::vector<std::uint8_t>& codes, int avgDivisor) {
  const fp8::Format& f = fp8::formatOf(type);
  std::vector<float> widened;
  for (std::uint8_t c : codes) widened.push_back(static_cast<float>(fp8::decode(f, c)));
  float acc = foldInOrder(kind, widened);
  if (kind == ReduceKind::kAvg) acc = acc / static_cast<float>(avgDivisor);
  return fp8::encode(f, acc);
}

// Runs reduceSources on the sources' codes and compares every element with float8Reference.
void expectFloat8Reduction(DataType type, ReduceKind kind, const std::vector<std::vector<std::uint8_t>>& srcs,
                           int avgDivisor) {
  const std::size_t count = srcs[0].size();
  std::vector<const void*> ptrs;
  for (const auto& s : srcs) ptrs.push_back(s.data());
  std::vector<std::uint8_t> got(count + 1, 0xa5);
  reduceSources(got.data(), ptrs.data(), static_cast<int>(srcs.size()), count, type, kind, avgDivisor);
  int failures = 0;
  std::vector<std::uint8_t> codes(srcs.size());
  for (std::size_t i = 0; i < count && failures < 5; ++i) {
    for (std::size_t s = 0; s < srcs.size(); ++s) codes[s] = srcs[s][i];
    const std::uint8_t want = float8Reference(type, kind, codes, avgDivisor);
    if (got[i] != want) {
      ++failures;
      std::string inputs;
      for (std::uint8_t c : codes) inputs += " " + std::to_string(c);
      ADD_FAILURE() << "element " << i << ": got " << int{got[i]} << " want " << int{want} << "; codes" << inputs;
    }
  }
  EXPECT_EQ(got[count], 0xa5) << "wrote past the end";
}

TEST_F(ReduceCpu, Float8FollowsTheDefinitionOnEveryCode) {
  std::mt19937_64 rng(10);
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (DataType type : kFloat8Types) {
      for (ReduceKind kind : kAllKinds) {
        if (!supported(type, kind)) continue;
        SCOPED_TRACE(isa + " " + dataTypeName(type) + " " + reduceKindName(kind));
        // Every code alone and every ordered pair of codes: NaNs, infinities, subnormals, signed zeros, overflow.
        std::vector<std::uint8_t> first(65536), second(65536);
        for (std::size_t i = 0; i < first.size(); ++i) {
          first[i] = static_cast<std::uint8_t>(i >> 8);
          second[i] = static_cast<std::uint8_t>(i);
        }
        expectFloat8Reduction(type, kind, {first}, 1);
        expectFloat8Reduction(type, kind, {first, second}, 2);
        if (kind == ReduceKind::kAvg) expectFloat8Reduction(type, kind, {first, second}, 7);
        // Three to thirteen sources of random codes (counts past whole chunks and tiles: tails too).
        for (int nsrcs : {3, 4, 5, 8, 13}) {
          std::vector<std::vector<std::uint8_t>> srcs(static_cast<std::size_t>(nsrcs), std::vector<std::uint8_t>(9001));
          for (auto& src : srcs) {
            for (auto& c : src) c = static_cast<std::uint8_t>(rng());
          }
          expectFloat8Reduction(type, kind, srcs, nsrcs);
        }
        // Small values whose sums the type holds, with a few that are not: the common case.
        for (int nsrcs : {2, 3, 8}) {
          std::vector<std::vector<std::uint8_t>> srcs(static_cast<std::size_t>(nsrcs), std::vector<std::uint8_t>(1000));
          for (auto& src : srcs) {
            for (auto& c : src) c = fp8::encode(fp8::formatOf(type), static_cast<double>(rng() % 9) - 4);
          }
          expectFloat8Reduction(type, kind, srcs, nsrcs);
        }
      }
    }
  }
}

// scaleCopy of ones by f rounds f itself once: every rounding boundary of both types, from the float64 product.
TEST_F(ReduceCpu, Float8ScaleCopyRoundsOnceAtEdges) {
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (DataType type : kFloat8Types) {
      const fp8::Format& f = fp8::formatOf(type);
      const std::vector<float> scales = fp8::roundingBoundaries(f);
      std::vector<std::uint8_t> ones(scales.size(), fp8::encode(f, 1.0)), out(scales.size());
      for (std::size_t i = 0; i < scales.size(); ++i) {
        scaleCopy(out.data() + i, ones.data() + i, 1, type, scales[i]);
        ASSERT_EQ(out[i], fp8::encode(f, scales[i])) << isa << " " << dataTypeName(type) << " scale bits 0x" << std::hex
                                                     << std::bit_cast<std::uint32_t>(scales[i]);
      }
      // Every code times scales that leave it exact, move it onto a boundary, or past the largest value.
      for (double scale : {1.0, -1.0, 0.5, 3.0, 1.0 / 3.0, 0x1p-9, 1e5, 0.0, -0.0, 1e-30}) {
        std::vector<std::uint8_t> all(256), scaled(256);
        for (int c = 0; c < 256; ++c) all[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(c);
        scaleCopy(scaled.data(), all.data(), 256, type, scale);
        for (int c = 0; c < 256; ++c) {
          const double product = fp8::decode(f, static_cast<std::uint8_t>(c)) * static_cast<float>(scale);  // exact
          ASSERT_EQ(scaled[static_cast<std::size_t>(c)], fp8::encode(f, product))
              << isa << " " << dataTypeName(type) << " code " << c << " scale " << scale;
        }
      }
    }
  }
}

TEST_F(ReduceCpu, RejectsInvalidArguments) {
  float a[4] = {}, out[4] = {};
  const void* srcs[1] = {a};
  auto expectInvalid = [](auto&& fn) {
    try {
      fn();
      ADD_FAILURE() << "no exception";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  };
  expectInvalid([&] { reduceSources(out, srcs, 1, 4, DataType::kFloat32, ReduceKind::kBxor); });
  expectInvalid([&] { reduceSources(out, srcs, 1, 4, DataType::kBool, ReduceKind::kAvg); });
  expectInvalid([&] { reduceSources(out, srcs, 1, 4, DataType::kBool, ReduceKind::kPremulSum); });
  expectInvalid([&] { reduceSources(out, srcs, 0, 4, DataType::kFloat32, ReduceKind::kSum); });
  expectInvalid([&] { reduceSources(out, srcs, 1, 4, DataType::kFloat32, ReduceKind::kAvg, 0); });
  expectInvalid([&] { reduceSources(out, srcs, 1, 4, static_cast<DataType>(42), ReduceKind::kSum); });
  expectInvalid([&] { reduceSources(out, srcs, 1, 4, DataType::kFloat32, static_cast<ReduceKind>(42)); });
  expectInvalid([&] { reduceSources(nullptr, srcs, 1, 4, DataType::kFloat32, ReduceKind::kSum); });
  expectInvalid([&] { scaleCopy(out, a, 4, DataType::kInt32, 0.5); });
  expectInvalid([&] { scaleCopy(out, a, 4, DataType::kInt32, std::numeric_limits<double>::infinity()); });
  reduceSources(nullptr, nullptr, 1, 0, DataType::kFloat32, ReduceKind::kSum);  // nothing to do
  scaleCopy(nullptr, nullptr, 0, DataType::kFloat32, 2.0);
}

}  // namespace
}  // namespace braid::host
