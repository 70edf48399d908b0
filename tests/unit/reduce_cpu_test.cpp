// The CPU reduction kernels, run under every kernel set this CPU supports. References are computed here from
// scratch, in float64 / 64-bit integers, with float16 rounding by the compiler's _Float16 (or a portable rounding
// where it has none), bfloat16 rounding by roundToFormat below and float8 by support/float8_reference.hpp, so neither
// the kernels' conversions nor base/half.hpp and base/float8.hpp check themselves.
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
#include "support/reduce_support.hpp"

namespace braid::host {
namespace {

using braid::testing::isaLevels;
namespace fp8 = braid::testing::fp8;

constexpr DataType kAllTypes[] = {DataType::kBool,      DataType::kInt8,    DataType::kUint8,   DataType::kInt32,
                                  DataType::kUint32,    DataType::kInt64,   DataType::kUint64,  DataType::kFloat16,
                                  DataType::kBFloat16,  DataType::kFloat32, DataType::kFloat64, DataType::kFloat8E4M3,
                                  DataType::kFloat8E5M2};
constexpr DataType kFloat8Types[] = {DataType::kFloat8E4M3, DataType::kFloat8E5M2};
constexpr ReduceKind kAllKinds[] = {ReduceKind::kSum,  ReduceKind::kProd, ReduceKind::kMin,
                                    ReduceKind::kMax,  ReduceKind::kAvg,  ReduceKind::kPremulSum,
                                    ReduceKind::kBand, ReduceKind::kBor,  ReduceKind::kBxor};

// From the tests' own support table: a combination the library wrongly refused would still be run, and fail.
bool supported(DataType type, ReduceKind kind) { return braid::testing::expectReduceSupported(type, kind); }

// ---- Independent rounding references.

// x rounded to nearest even with `precision` significant bits, normal exponents down to minExp (below that, the
// last place stays at minExp - precision + 1: subnormals), overflowing to inf above maxFinite.
double roundToFormat(double x, int precision, int minExp, double maxFinite) {
  if (!std::isfinite(x) || x == 0) return x;
  int e = 0;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  const int lastPlace = (e - 1 > minExp ? e - 1 : minExp) - (precision - 1);
  const double y = std::ldexp(std::nearbyint(std::ldexp(x, -lastPlace)), lastPlace);
  return std::fabs(y) > maxFinite ? std::copysign(std::numeric_limits<double>::infinity(), x) : y;
}

#if defined(__FLT16_MANT_DIG__)
// The compiler's own double -> _Float16 conversion (GCC 12; clang from 15 on x86) is the float16 reference.
std::uint16_t halfBitsOf(double x) { return std::bit_cast<std::uint16_t>(static_cast<_Float16>(x)); }
double halfValue(std::uint16_t h) { return static_cast<double>(std::bit_cast<_Float16>(h)); }
#else
// Compilers without _Float16 (clang 14, which builds the sanitizer run): one rounding by roundToFormat, then the
// exact float16 encoding of the result. NaN comes out quiet with its sign, as the compilers' conversions do.
std::uint16_t halfBitsOf(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7e00;
  const double y = std::fabs(roundToFormat(x, 11, -14, 65504.0));
  if (std::isinf(y)) return sign | 0x7c00;
  if (y < 0x1p-14) return sign | static_cast<std::uint16_t>(std::ldexp(y, 24));  // subnormal (or zero)
  int e = 0;
  const double m = std::frexp(y, &e);  // y = m * 2^e, m in [0.5, 1)
  return sign | static_cast<std::uint16_t>((e - 1 + 15) << 10) | static_cast<std::uint16_t>(std::ldexp(m, 11) - 1024);
}
double halfValue(std::uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return mant ? std::copysign(std::numeric_limits<double>::quiet_NaN(), sign) : sign * HUGE_VAL;
  return sign * (exp ? std::ldexp(1024 + mant, exp - 25) : std::ldexp(mant, -24));
}
#endif

constexpr double kBf16Max = 3.3895313892515355e38;  // (2 - 2^-7) * 2^127
std::uint16_t bf16BitsOf(double x) {
  if (std::isnan(x)) return 0x7fc0;
  const float f = static_cast<float>(roundToFormat(x, 8, -126, kBf16Max));  // exact: already a bfloat16
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16);
}
double bf16Value(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// ---- Typed buffers.

struct Buffer {
  DataType type;
  std::vector<std::byte> bytes;
  Buffer(DataType t, std::size_t count) : type(t), bytes(count * dataTypeSize(t) + 1) {}  // +1: never empty
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  std::size_t count() const { return (bytes.size() - 1) / dataTypeSize(type); }

  template <typename T>
  T get(std::size_t i) const {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    return v;
  }
  template <typename T>
  void put(std::size_t i, T v) {
    std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
  }

  // Floats as float64 (exact).
  double getF(std::size_t i) const {
    switch (type) {
      case DataType::kFloat16:
        return halfValue(get<std::uint16_t>(i));
      case DataType::kBFloat16:
        return bf16Value(get<std::uint16_t>(i));
      case DataType::kFloat32:
        return get<float>(i);
      case DataType::kFloat8E4M3:
      case DataType::kFloat8E5M2:
        return fp8::decode(fp8::formatOf(type), get<std::uint8_t>(i));
      default:
        return get<double>(i);
    }
  }
  // Floats rounded to nearest even.
  void putF(std::size_t i, double v) {
    switch (type) {
      case DataType::kFloat16:
        return put<std::uint16_t>(i, halfBitsOf(v));
      case DataType::kBFloat16:
        return put<std::uint16_t>(i, bf16BitsOf(v));
      case DataType::kFloat32:
        return put<float>(i, static_cast<float>(v));
      case DataType::kFloat8E4M3:
      case DataType::kFloat8E5M2:
        return put<std::uint8_t>(i, fp8::encode(fp8::formatOf(type), v));
      default:
        return put<double>(i, v);
    }
  }
  // Integers as their value (sign-extended for signed types; uint64 as its bit pattern).
  std::int64_t getI(std::size_t i) const {
    switch (type) {
      case DataType::kBool:
      case DataType::kUint8:
        return get<std::uint8_t>(i);
      case DataType::kInt8:
        return get<std::int8_t>(i);
      case DataType::kInt32:
        return get<std::int32_t>(i);
      case DataType::kUint32:
        return get<std::uint32_t>(i);
      default:
        return get<std::int64_t>(i);
    }
  }
  // Integers truncated to the type's width (wraps); on float types, a raw bit pattern.
  void putI(std::size_t i, std::uint64_t v) {
    switch (dataTypeSize(type)) {
      case 1:
        return put<std::uint8_t>(i, static_cast<std::uint8_t>(v));
      case 2:
        return put<std::uint16_t>(i, static_cast<std::uint16_t>(v));
      case 4:
        return put<std::uint32_t>(i, static_cast<std::uint32_t>(v));
      default:
        return put<std::uint64_t>(i, v);
    }
  }
  bool sameBits(const Buffer& o) const { return bytes == o.bytes; }
};

// Element i's bytes, for messages.
std::string hexOf(const Buffer& b, std::size_t i) {
  std::string s;
  const std::size_t n = dataTypeSize(b.type);
  char tmp[4];
  for (std::size_t k = n; k-- > 0;) {
    std::snprintf(tmp, sizeof(tmp), "%02x", static_cast<unsigned>(b.bytes[i * n + k]));
    s += tmp;
  }
  return s;
}

std::vector<const void*> pointers(const std::vector<Buffer>& srcs, int n) {
  std::vector<const void*> p;
  for (int s = 0; s < n; ++s) p.push_back(srcs[static_cast<std::size_t>(s)].data());
  return p;
}

// ---- References.

// Float fold in float64, with the documented min/max rule (NaN propagates; between equal values the later wins).
double refFloat(ReduceKind kind, const std::vector<double>& xs, int avgDivisor) {
  double acc = xs[0];
  for (std::size_t s = 1; s < xs.size(); ++s) {
    const double x = xs[s];
    switch (kind) {
      case ReduceKind::kProd:
        acc = acc * x;
        break;
      case ReduceKind::kMin:
        acc = (acc < x || std::isnan(acc)) ? acc : x;
        break;
      case ReduceKind::kMax:
        acc = (acc > x || std::isnan(acc)) ? acc : x;
        break;
      default:
        acc = acc + x;
        break;
    }
  }
  return kind == ReduceKind::kAvg ? acc / avgDivisor : acc;
}

bool isSignedInt(DataType t) { return t == DataType::kInt8 || t == DataType::kInt32 || t == DataType::kInt64; }

// Integer fold modulo 2^64, truncated to the type's width by putI.
std::uint64_t refInt(DataType type, ReduceKind kind, const std::vector<std::int64_t>& xs, int avgDivisor) {
  auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  if (type == DataType::kBool) {
    bool acc = xs[0] != 0;
    for (std::size_t s = 1; s < xs.size(); ++s) {
      const bool x = xs[s] != 0;
      if (kind == ReduceKind::kSum || kind == ReduceKind::kMax || kind == ReduceKind::kBor) acc = acc || x;
      if (kind == ReduceKind::kProd || kind == ReduceKind::kMin || kind == ReduceKind::kBand) acc = acc && x;
      if (kind == ReduceKind::kBxor) acc = acc != x;
    }
    return acc ? 1 : 0;
  }
  const bool isU64 = type == DataType::kUint64;
  auto less = [isU64, u](std::int64_t a, std::int64_t b) { return isU64 ? u(a) < u(b) : a < b; };
  std::uint64_t acc = u(xs[0]);
  for (std::size_t s = 1; s < xs.size(); ++s) {
    const std::int64_t x = xs[s];
    const auto a = static_cast<std::int64_t>(acc);
    switch (kind) {
      case ReduceKind::kProd:
        acc *= u(x);
        break;
      case ReduceKind::kMin:
        acc = less(a, x) ? acc : u(x);
        break;
      case ReduceKind::kMax:
        acc = less(x, a) ? acc : u(x);
        break;
      case ReduceKind::kBand:
        acc &= u(x);
        break;
      case ReduceKind::kBor:
        acc |= u(x);
        break;
      case ReduceKind::kBxor:
        acc ^= u(x);
        break;
      default:
        acc += u(x);
        break;
    }
  }
  if (kind != ReduceKind::kAvg) return acc;
  // Interpret the wrapped sum in the type, then divide truncating toward zero.
  Buffer tmp(type, 1);
  tmp.putI(0, acc);
  const std::int64_t sum = tmp.getI(0);
  if (isSignedInt(type)) return u(sum / avgDivisor);
  return u(sum) / static_cast<std::uint64_t>(avgDivisor);
}

// Expected output of element i, in the output type's bits.
void putReference(Buffer& out, std::size_t i, const std::vector<Buffer>& srcs, int nsrcs, ReduceKind kind,
                  int avgDivisor) {
  if (isFloating(out.type)) {
    std::vector<double> xs;
    for (int s = 0; s < nsrcs; ++s) xs.push_back(srcs[static_cast<std::size_t>(s)].getF(i));
    const double r = refFloat(kind, xs, avgDivisor);
    if (std::isnan(r)) {  // canonical quiet NaN
      switch (out.type) {
        case DataType::kFloat16:
          return out.put<std::uint16_t>(i, 0x7e00);
        case DataType::kBFloat16:
          return out.put<std::uint16_t>(i, 0x7fc0);
        case DataType::kFloat32:
          return out.put<std::uint32_t>(i, 0x7fc00000u);
        case DataType::kFloat8E4M3:
        case DataType::kFloat8E5M2:
          return out.put<std::uint8_t>(i, fp8::formatOf(out.type).nan);
        default:
          return out.put<std::uint64_t>(i, 0x7ff8000000000000ull);
      }
    }
    return out.putF(i, r);
  }
  std::vector<std::int64_t> xs;
  for (int s = 0; s < nsrcs; ++s) xs.push_back(srcs[static_cast<std::size_t>(s)].getI(i));
  out.putI(i, refInt(out.type, kind, xs, avgDivisor));
}

// Exact-sum inputs: every sum, product, average and min/max of them is exact in every type (nccl-tests' method).
void fillExact(Buffer& b, ReduceKind kind, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> small(-3, 3);
  std::uniform_int_distribution<int> pick(0, 2);
  std::uniform_int_distribution<std::uint64_t> bits;
  const int prodValues[3] = {1, 2, -1};
  for (std::size_t i = 0; i < b.count(); ++i) {
    if (b.type == DataType::kBool) {
      b.putI(i, pick(rng) == 0 ? 0 : (pick(rng) == 0 ? 1 : 7));  // non-canonical trues too
    } else if (kind == ReduceKind::kBand || kind == ReduceKind::kBor || kind == ReduceKind::kBxor) {
      b.putI(i, bits(rng));
    } else if (kind == ReduceKind::kProd) {
      isFloating(b.type) ? b.putF(i, prodValues[pick(rng)])
                         : b.putI(i, static_cast<std::uint64_t>(prodValues[pick(rng)]));
    } else if (isFloating(b.type)) {
      b.putF(i, small(rng) * 0.5);
    } else if (kind == ReduceKind::kMin || kind == ReduceKind::kMax) {
      b.putI(i, bits(rng));  // full range: signed/unsigned comparison matters
    } else {
      b.putI(i, static_cast<std::uint64_t>(static_cast<std::int64_t>(small(rng))));
    }
  }
}

// Random values including specials (NaN, inf, subnormals, signed zeros), for the cross-ISA comparison. The tiny and
// huge ones reach the type's subnormals and overflow its sums.
void fillWild(Buffer& b, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::uint64_t> bits;
  std::uniform_real_distribution<double> uni(-4, 4);
  std::uniform_int_distribution<int> pick(0, 31);
  const double tiny = b.type == DataType::kFloat8E4M3 ? 0x1p-8 : b.type == DataType::kFloat8E5M2 ? 0x1p-15 : 1e-7;
  const double huge = b.type == DataType::kFloat8E4M3 ? 150 : b.type == DataType::kFloat8E5M2 ? 20000 : 16000;
  for (std::size_t i = 0; i < b.count(); ++i) {
    if (!isFloating(b.type)) {
      b.putI(i, bits(rng));
      continue;
    }
    switch (pick(rng)) {
      case 0:
        b.putF(i, std::numeric_limits<double>::quiet_NaN());
        break;
      case 1:
        b.putF(i, -std::numeric_limits<double>::infinity());
        break;
      case 2:
        b.putF(i, -0.0);
        break;
      case 3:  // arbitrary bit pattern: NaN payloads, subnormals, huge values
        b.putI(i, bits(rng));
        break;
      case 4:
        b.putF(i, uni(rng) * tiny);  // subnormals
        break;
      case 5:
        b.putF(i, uni(rng) * huge);  // overflow in sums
        break;
      default:
        b.putF(i, uni(rng));
    }
  }
}

class ReduceCpu : public ::testing::Test {
 protected:
  void TearDown() override { setReduceIsaCap("auto"); }
};

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
  std::mt19937 rng(9);
  std::vector<float> scales = {65504.0f,
                               65519.99f,
                               65520.0f,
                               1e6f,
                               0x1p-24f,
                               0x1p-25f,
                               0x1.8p-25f,
                               0x1p-26f,
                               0x1.ffcp-15f,
                               0x1.ffep-15f,
                               0x1p-14f,
                               1.0f + 0x1p-11f,
                               1.0f + 0x1.8p-10f,
                               std::bit_cast<float>(0x7f7f8000u),
                               std::bit_cast<float>(0x7f7f7fffu),
                               std::bit_cast<float>(0x3f808000u),
                               std::bit_cast<float>(0x3f818000u),
                               std::bit_cast<float>(0x00008000u),
                               std::bit_cast<float>(0x00018000u),
                               std::numeric_limits<float>::denorm_min(),
                               std::numeric_limits<float>::max()};
  for (int k = 0; k < 20000; ++k) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (std::isfinite(f)) scales.push_back(f);
    scales.push_back(std::ldexp(static_cast<float>(rng() % 4096) / 2048.0f, static_cast<int>(rng() % 48) - 30));
  }
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
  auto widen = [&f](std::uint8_t c) { return static_cast<float>(fp8::decode(f, c)); };
  float acc = widen(codes[0]);
  for (std::size_t s = 1; s < codes.size(); ++s) {
    const float x = widen(codes[s]);
    switch (kind) {
      case ReduceKind::kProd:
        acc = acc * x;
        break;
      case ReduceKind::kMin:
        acc = (acc < x || std::isnan(acc)) ? acc : x;
        break;
      case ReduceKind::kMax:
        acc = (acc > x || std::isnan(acc)) ? acc : x;
        break;
      default:  // sum, avg, premul_sum (its scaling is scaleCopy's)
        acc = acc + x;
    }
  }
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

// ---- base/half.hpp against the compiler's _Float16 conversions (or the portable reference above).

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
