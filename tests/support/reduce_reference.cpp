#include "support/reduce_reference.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "base/data_type.hpp"
#include "support/reduce_support.hpp"

namespace braid::testing {

// From the tests' own support table: a combination the library wrongly refused would still be run, and fail.
bool supported(DataType type, ReduceKind kind) { return expectReduceSupported(type, kind); }

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

std::uint16_t bf16BitsOf(double x) {
  if (std::isnan(x)) return 0x7fc0;
  const float f = static_cast<float>(roundToFormat(x, 8, -126, kBf16Max));  // exact: already a bfloat16
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16);
}
double bf16Value(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

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

double refFloat(ReduceKind kind, const std::vector<double>& xs, int avgDivisor) {
  const double acc = foldInOrder(kind, xs);
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

std::vector<float> halfRoundingScales(int randomPairs) {
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
  for (int k = 0; k < randomPairs; ++k) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (std::isfinite(f)) scales.push_back(f);
    scales.push_back(std::ldexp(static_cast<float>(rng() % 4096) / 2048.0f, static_cast<int>(rng() % 48) - 30));
  }
  return scales;
}

}  // namespace braid::testing
