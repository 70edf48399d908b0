// The CPU reduction kernels, run under every kernel set this CPU supports, against references computed from scratch
// (support/reduce_reference.hpp): every type, operator, source count and length; random floats within the stated
// bounds; the same bits from every kernel set, specials included. scaleCopy and float8 are in
// reduce_cpu_scale_test.cpp, base/half.hpp's conversions in half_conversions_test.cpp.
#include "algorithms/host/reduce_cpu.hpp"

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

TEST_F(ReduceCpu, DetectsAndCapsIsa) {
  const auto levels = isaLevels();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), "generic");
  EXPECT_EQ(std::string(reduceIsaName()), levels.back());  // auto = the best present
  setReduceIsaCap("generic");
  EXPECT_STREQ(reduceIsaName(), "generic");
  setReduceIsaCap("AVX2");
  EXPECT_STREQ(reduceIsaName(), levels.size() >= 2 ? "avx2" : "generic");
  setReduceIsaCap("");
  EXPECT_EQ(std::string(reduceIsaName()), levels.back());
  try {
    setReduceIsaCap("sse9");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("sse9"), std::string::npos) << e.message();
  }
  std::printf("[ info ] reduce kernel sets on this CPU:");
  for (const auto& l : levels) std::printf(" %s", l.c_str());
  std::printf("\n");
}

// What no kernel applies to is refused with the reason, by name, on every call (the op is looked up in a table made
// once, so the refusals must come through it): values outside the enums, bitwise ops on floats, avg and premul-sum
// on bool. The table's other entries are exercised by the exact-input test below.
TEST_F(ReduceCpu, RefusesWhatNoKernelAppliesToNamingWhy) {
  float f[2] = {1, 2};
  const void* fsrcs[2] = {&f[0], &f[1]};
  float fout = 0;
  bool b[2] = {true, false};
  const void* bsrcs[2] = {&b[0], &b[1]};
  bool bout = false;
  const auto refused = [](auto call, const std::string& why) {
    try {
      call();
      ADD_FAILURE() << "no exception; expected: " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(e.message().find(why), std::string::npos) << e.message();
    }
  };
  for (int twice = 0; twice < 2; ++twice) {  // the second time from the table made by the first
    refused([&] { reduceSources(&fout, fsrcs, 2, 1, DataType::kFloat32, ReduceKind::kBand); },
            "reduce op band needs an integer or bool type, got float32");
    refused([&] { reduceSources(&bout, bsrcs, 2, 1, DataType::kBool, ReduceKind::kAvg); },
            "reduce op avg is not defined for bool");
    refused([&] { reduceSources(&fout, fsrcs, 2, 1, DataType::kFloat32, static_cast<ReduceKind>(42)); },
            "invalid reduce op value 42");
    refused([&] { reduceSources(&fout, fsrcs, 2, 1, static_cast<DataType>(99), ReduceKind::kSum); },
            "invalid data type value 99");
  }
  // Beside them, what the table maps: premul-sum reduces as a sum (its scale applied before), bool's sum as an or.
  reduceSources(&fout, fsrcs, 2, 1, DataType::kFloat32, ReduceKind::kPremulSum);
  EXPECT_EQ(fout, 3.0f);
  reduceSources(&bout, bsrcs, 2, 1, DataType::kBool, ReduceKind::kSum);
  EXPECT_TRUE(bout);
}

// Every type x op x source count x length, exact-sum inputs, 0 ulp.
TEST_F(ReduceCpu, ExactInputsEveryTypeOpCount) {
  std::mt19937_64 rng(1);
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (DataType type : kAllTypes) {
      for (ReduceKind kind : kAllKinds) {
        if (!supported(type, kind)) continue;
        for (int nsrcs : {1, 2, 3, 4, 8}) {
          for (std::size_t count : {0, 1, 7, 33, 1023, 4099}) {
            SCOPED_TRACE(isa + " " + dataTypeName(type) + " " + reduceKindName(kind) +
                         " nsrcs=" + std::to_string(nsrcs) + " count=" + std::to_string(count));
            std::vector<Buffer> srcs;
            for (int s = 0; s < nsrcs; ++s) {
              srcs.emplace_back(type, count);
              fillExact(srcs.back(), kind, rng);
            }
            Buffer got(type, count), want(type, count);
            std::memset(got.data(), 0xa5, got.bytes.size());
            std::memset(want.data(), 0xa5, want.bytes.size());  // the guard byte must survive
            for (std::size_t i = 0; i < count; ++i) putReference(want, i, srcs, nsrcs, kind, nsrcs);
            const auto ptrs = pointers(srcs, nsrcs);
            reduceSources(got.data(), ptrs.data(), nsrcs, count, type, kind, nsrcs);
            if (!got.sameBits(want)) {
              std::size_t i = 0;
              while (i < count && hexOf(got, i) == hexOf(want, i)) ++i;
              ADD_FAILURE() << "first difference at " << i << ": got " << (i < count ? hexOf(got, i) : "guard")
                            << " want " << (i < count ? hexOf(want, i) : "guard");
            }
          }
        }
      }
    }
  }
}

// Random float inputs against a float64 reference, within the stated bounds.
TEST_F(ReduceCpu, RandomFloatsWithinBounds) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> uni(-1, 1);
  std::uniform_real_distribution<double> positive(0.5, 2);
  const std::size_t count = 4099;
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (DataType type : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64,
                          DataType::kFloat8E4M3, DataType::kFloat8E5M2}) {
      for (ReduceKind kind : {ReduceKind::kSum, ReduceKind::kProd, ReduceKind::kAvg}) {
        for (int nsrcs : {1, 2, 3, 4, 8, 13}) {
          SCOPED_TRACE(isa + " " + dataTypeName(type) + " " + reduceKindName(kind) + " nsrcs=" + std::to_string(nsrcs));
          std::vector<Buffer> srcs;
          for (int s = 0; s < nsrcs; ++s) {
            srcs.emplace_back(type, count);
            for (std::size_t i = 0; i < count; ++i) {
              // float8 products stay within [0.8, 1.25] per factor: 13 of them neither overflow e4m3 nor underflow.
              const double factor = fp8::isFloat8(type) ? 0.8 + (positive(rng) - 0.5) * 0.3 : positive(rng);
              srcs.back().putF(i, kind == ReduceKind::kProd ? factor : uni(rng));
            }
          }
          Buffer got(type, count);
          const auto ptrs = pointers(srcs, nsrcs);
          reduceSources(got.data(), ptrs.data(), nsrcs, count, type, kind, nsrcs);
          int failures = 0;
          for (std::size_t i = 0; i < count && failures < 5; ++i) {
            std::vector<double> xs;
            double magnitude = 0;  // sum |x| (sum, avg) or |product| (prod): what the accumulation error scales with
            for (int s = 0; s < nsrcs; ++s) {
              xs.push_back(srcs[static_cast<std::size_t>(s)].getF(i));
              magnitude += std::fabs(xs.back());
            }
            const double ref = refFloat(kind, xs, nsrcs);
            if (kind == ReduceKind::kProd) magnitude = std::fabs(ref);
            if (kind == ReduceKind::kAvg) magnitude /= nsrcs;
            const double v = got.getF(i);
            double bound = 0;
            switch (type) {
              case DataType::kFloat32:  // relative 1e-6 per source
                bound = 1e-6 * nsrcs * magnitude;
                break;
              case DataType::kFloat64:
                bound = 1e-15 * nsrcs * magnitude;
                break;
              default: {
                // One ulp of the 8- or 16-bit result, plus float32 accumulation error (2^-24 per source).
                Buffer one(type, 1);
                one.putF(0, ref);
                const double rounded = one.getF(0);
                int e = 0;
                std::frexp(rounded == 0 ? ref : rounded, &e);
                const int precision = type == DataType::kFloat16    ? 11
                                      : type == DataType::kBFloat16 ? 8
                                                                    : fp8::formatOf(type).mantBits + 1;
                const int minExp = type == DataType::kFloat16    ? -14
                                   : type == DataType::kBFloat16 ? -126
                                                                 : 1 - fp8::formatOf(type).bias;
                const double ulp = std::ldexp(1.0, (e - 1 > minExp ? e - 1 : minExp) - (precision - 1));
                bound = ulp + std::ldexp(magnitude * nsrcs, -24);
              }
            }
            if (!(std::fabs(v - ref) <= bound)) {
              ++failures;
              ADD_FAILURE() << "element " << i << ": got " << v << " reference " << ref << " bound " << bound;
            }
          }
        }
      }
    }
  }
}

TEST_F(ReduceCpu, IntegerAverageTruncatesAndSumsWrap) {
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    SCOPED_TRACE(isa);
    {
      const std::int8_t a[2] = {-1, 1}, b[2] = {-2, 2};
      std::int8_t out[2];
      const void* srcs[2] = {a, b};
      reduceSources(out, srcs, 2, 2, DataType::kInt8, ReduceKind::kAvg, 2);
      EXPECT_EQ(out[0], -1);
      EXPECT_EQ(out[1], 1);
    }
    {
      const std::int32_t a[3] = {-1, 1, -7}, b[3] = {-2, 2, 0};
      std::int32_t out[3];
      const void* srcs[2] = {a, b};
      reduceSources(out, srcs, 2, 3, DataType::kInt32, ReduceKind::kAvg, 2);
      EXPECT_EQ(out[0], -1);
      EXPECT_EQ(out[1], 1);
      EXPECT_EQ(out[2], -3);
    }
    {
      const std::int64_t a[2] = {-1, std::numeric_limits<std::int64_t>::max()}, b[2] = {-2, 0};
      std::int64_t out[2];
      const void* srcs[2] = {a, b};
      reduceSources(out, srcs, 2, 2, DataType::kInt64, ReduceKind::kAvg, 2);
      EXPECT_EQ(out[0], -1);
      EXPECT_EQ(out[1], std::numeric_limits<std::int64_t>::max() / 2);
    }
    {
      const std::uint32_t a[1] = {1}, b[1] = {2};
      std::uint32_t out[1];
      const void* srcs[2] = {a, b};
      reduceSources(out, srcs, 2, 1, DataType::kUint32, ReduceKind::kAvg, 2);
      EXPECT_EQ(out[0], 1u);
    }
    {
      const std::int8_t a[1] = {100}, b[1] = {100};
      std::int8_t out[1];
      const void* srcs[2] = {a, b};
      reduceSources(out, srcs, 2, 1, DataType::kInt8, ReduceKind::kSum);
      EXPECT_EQ(out[0], -56);
    }
    {
      const std::uint8_t a[1] = {200}, b[1] = {100};
      std::uint8_t out[1];
      const void* srcs[2] = {a, b};
      reduceSources(out, srcs, 2, 1, DataType::kUint8, ReduceKind::kSum);
      EXPECT_EQ(out[0], 44);
    }
    {
      const std::int32_t a[1] = {std::numeric_limits<std::int32_t>::max()}, b[1] = {1};
      std::int32_t out[1];
      const void* srcs[2] = {a, b};
      reduceSources(out, srcs, 2, 1, DataType::kInt32, ReduceKind::kSum);
      EXPECT_EQ(out[0], std::numeric_limits<std::int32_t>::min());
      reduceSources(out, srcs, 2, 1, DataType::kInt32, ReduceKind::kProd);
      EXPECT_EQ(out[0], std::numeric_limits<std::int32_t>::max());
    }
    {
      const std::uint8_t a[4] = {0, 2, 255, 0}, b[4] = {0, 0, 9, 1};
      std::uint8_t out[4];
      const void* srcs[2] = {a, b};
      reduceSources(out, srcs, 2, 4, DataType::kBool, ReduceKind::kSum);
      EXPECT_EQ(std::vector<int>(out, out + 4), (std::vector<int>{0, 1, 1, 1}));
      reduceSources(out, srcs, 2, 4, DataType::kBool, ReduceKind::kMin);
      EXPECT_EQ(std::vector<int>(out, out + 4), (std::vector<int>{0, 0, 1, 0}));
      reduceSources(out, srcs, 2, 4, DataType::kBool, ReduceKind::kBxor);
      EXPECT_EQ(std::vector<int>(out, out + 4), (std::vector<int>{0, 1, 0, 1}));
    }
  }
}

TEST_F(ReduceCpu, FloatMinMaxPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    SCOPED_TRACE(isa);
    const float a[3] = {nan, 1.0f, 2.0f}, b[3] = {1.0f, -nan, 3.0f},
                c[3] = {0.0f, 0.0f, -std::numeric_limits<float>::infinity()};
    float out[3];
    const void* srcs[3] = {a, b, c};
    for (ReduceKind kind : {ReduceKind::kMin, ReduceKind::kMax}) {
      reduceSources(out, srcs, 3, 3, DataType::kFloat32, kind);
      EXPECT_EQ(std::bit_cast<std::uint32_t>(out[0]), 0x7fc00000u);  // canonical, whatever the input payload
      EXPECT_EQ(std::bit_cast<std::uint32_t>(out[1]), 0x7fc00000u);
      EXPECT_EQ(out[2], kind == ReduceKind::kMin ? -std::numeric_limits<float>::infinity() : 3.0f);
    }
  }
}

TEST_F(ReduceCpu, DestinationMayAliasFirstSource) {
  std::mt19937_64 rng(3);
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    for (DataType type : kAllTypes) {
      for (ReduceKind kind : kAllKinds) {
        if (!supported(type, kind)) continue;
        for (int nsrcs : {1, 2, 3, 8}) {
          for (std::size_t count : {5, 64, 1000, 2053}) {
            SCOPED_TRACE(isa + " " + dataTypeName(type) + " " + reduceKindName(kind) +
                         " nsrcs=" + std::to_string(nsrcs) + " count=" + std::to_string(count));
            std::vector<Buffer> srcs;
            for (int s = 0; s < nsrcs; ++s) {
              srcs.emplace_back(type, count);
              fillWild(srcs.back(), rng);
            }
            Buffer apart(type, count);
            auto ptrs = pointers(srcs, nsrcs);
            reduceSources(apart.data(), ptrs.data(), nsrcs, count, type, kind, 3);
            reduceSources(srcs[0].data(), ptrs.data(), nsrcs, count, type, kind, 3);
            EXPECT_TRUE(srcs[0].sameBits(apart));
          }
        }
      }
    }
  }
}

// The acceptance test of the dispatch: every kernel set writes the same bits, specials included.
TEST_F(ReduceCpu, BitIdenticalAcrossIsas) {
  const auto levels = isaLevels();
  if (levels.size() < 2) GTEST_SKIP() << "only the generic kernels run on this CPU";
  std::mt19937_64 rng(4);
  for (DataType type : kAllTypes) {
    for (ReduceKind kind : kAllKinds) {
      if (!supported(type, kind)) continue;
      for (int nsrcs : {1, 2, 3, 5, 8, 13, 33}) {
        const std::size_t count = 4099 + static_cast<std::size_t>(nsrcs);
        SCOPED_TRACE(std::string(dataTypeName(type)) + " " + reduceKindName(kind) + " nsrcs=" + std::to_string(nsrcs));
        std::vector<Buffer> srcs;
        for (int s = 0; s < nsrcs; ++s) {
          srcs.emplace_back(type, count);
          fillWild(srcs.back(), rng);
        }
        const auto ptrs = pointers(srcs, nsrcs);
        std::vector<Buffer> outs;
        for (const auto& isa : levels) {
          setReduceIsaCap(isa);
          outs.emplace_back(type, count);
          reduceSources(outs.back().data(), ptrs.data(), nsrcs, count, type, kind, 7);
        }
        for (std::size_t l = 1; l < levels.size(); ++l) {
          if (outs[l].sameBits(outs[0])) continue;
          std::size_t i = 0;
          while (hexOf(outs[l], i) == hexOf(outs[0], i)) ++i;
          ADD_FAILURE() << levels[l] << " differs from generic at " << i << ": " << hexOf(outs[l], i) << " vs "
                        << hexOf(outs[0], i);
        }
      }
    }
    // scaleCopy too.
    const std::vector<double> scales =
        isInteger(type) ? std::vector<double>{5, -3, 12345} : std::vector<double>{0.3, -3.0, 1e30};
    for (double scale : scales) {
      const std::size_t count = 1027;
      Buffer src(type, count);
      fillWild(src, rng);
      std::vector<Buffer> outs;
      for (const auto& isa : levels) {
        setReduceIsaCap(isa);
        outs.emplace_back(type, count);
        scaleCopy(outs.back().data(), src.data(), count, type, scale);
      }
      for (std::size_t l = 1; l < levels.size(); ++l) {
        EXPECT_TRUE(outs[l].sameBits(outs[0])) << dataTypeName(type) << " scaleCopy " << scale << " " << levels[l];
      }
    }
  }
}

// Every float16 through each kernel set: the round trip is the identity (NaN: canonical), and sums of two match
// GCC's _Float16 rounding of the float32 sum.
TEST_F(ReduceCpu, Float16KernelConversionsExhaustive) {
  Buffer all(DataType::kFloat16, 65536), other(DataType::kFloat16, 65536);
  std::mt19937_64 rng(5);
  for (std::size_t i = 0; i < 65536; ++i) {
    all.put<std::uint16_t>(i, static_cast<std::uint16_t>(i));
    other.put<std::uint16_t>(i, static_cast<std::uint16_t>(rng()));
  }
  for (const auto& isa : isaLevels()) {
    setReduceIsaCap(isa);
    SCOPED_TRACE(isa);
    Buffer out(DataType::kFloat16, 65536);
    const void* one[1] = {all.data()};
    reduceSources(out.data(), one, 1, 65536, DataType::kFloat16, ReduceKind::kSum);
    const void* two[2] = {all.data(), other.data()};
    Buffer sum(DataType::kFloat16, 65536);
    reduceSources(sum.data(), two, 2, 65536, DataType::kFloat16, ReduceKind::kSum);
    int failures = 0;
    for (std::size_t i = 0; i < 65536 && failures < 10; ++i) {
      const auto h = static_cast<std::uint16_t>(i);
      const std::uint16_t wantOne = std::isnan(halfValue(h)) ? 0x7e00 : h;
      const float f = static_cast<float>(halfValue(h)) + static_cast<float>(halfValue(other.get<std::uint16_t>(i)));
      const std::uint16_t wantSum = std::isnan(f) ? 0x7e00 : halfBitsOf(f);
      if (out.get<std::uint16_t>(i) != wantOne || sum.get<std::uint16_t>(i) != wantSum) {
        ++failures;
        ADD_FAILURE() << "half " << i << ": copy " << out.get<std::uint16_t>(i) << " want " << wantOne << ", sum "
                      << sum.get<std::uint16_t>(i) << " want " << wantSum;
      }
    }
  }
}

// Megabyte buffers of many sources, as tests/perf/reduce_cpu_bench.cpp times them: every kernel set's sum
// equals the exact one (the values are small integers, so every partial sum is exact in float16 and bfloat16).
TEST_F(ReduceCpu, LargeSumsExactOnEveryIsa) {
  constexpr int kSources = 8;
  constexpr std::size_t kBytes = 1u << 20;
  for (DataType type : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    const std::size_t count = kBytes / dataTypeSize(type) + 3;  // a tail past the last whole chunk
    std::vector<Buffer> srcs;
    for (int s = 0; s < kSources; ++s) {
      srcs.emplace_back(type, count);
      for (std::size_t i = 0; i < count; ++i) srcs.back().putF(i, static_cast<double>((i + s) % 7));
    }
    const auto ptrs = pointers(srcs, kSources);
    for (int nsrcs : {2, kSources}) {
      Buffer want(type, count);
      for (std::size_t i = 0; i < count; ++i) {
        double sum = 0;
        for (int s = 0; s < nsrcs; ++s) sum += static_cast<double>((i + s) % 7);
        want.putF(i, sum);
      }
      for (const auto& isa : isaLevels()) {
        setReduceIsaCap(isa);
        SCOPED_TRACE(isa + " " + dataTypeName(type) + " nsrcs=" + std::to_string(nsrcs));
        Buffer got(type, count);
        std::memset(got.data(), 0xa5, got.bytes.size());
        want.bytes.back() = std::byte{0xa5};  // the guard byte past the end stays untouched
        reduceSources(got.data(), ptrs.data(), nsrcs, count, type, ReduceKind::kSum);
        if (!got.sameBits(want)) {
          std::size_t i = 0;
          while (i < count && hexOf(got, i) == hexOf(want, i)) ++i;
          ADD_FAILURE() << "first difference at " << i << ": got " << (i < count ? hexOf(got, i) : "guard") << " want "
                        << (i < count ? hexOf(want, i) : "guard");
        }
      }
    }
  }
}

}  // namespace
}  // namespace braid::host
