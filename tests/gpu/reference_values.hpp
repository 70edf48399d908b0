// Expected results of the GPU tests, computed here and not by braid: float16/bfloat16 conversions written out
// (round to nearest even, not base/half.hpp), float8 from its definition (support/float8_reference.hpp, not
// base/float8.hpp: nearest even, saturating at the largest finite value), and the element-wise reduction of exact-sum
// inputs over ranks in float64 / 64-bit integers, rounded once to the type. A bug that braid's host and device paths
// share (an op mapped to the wrong one, an average not divided, a premul scale dropped, a type's rounding) therefore
// shows here.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "braid/types.hpp"
#include "support/float8_reference.hpp"
#include "support/reduce_support.hpp"

namespace braid::gputest::ref {

inline std::size_t sizeOf(DataType t) {
  switch (t) {
    case DataType::kBool:
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kFloat8E4M3:
    case DataType::kFloat8E5M2:
      return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kFloat32:
      return 4;
    default:
      return 8;
  }
}
inline bool floatType(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat32 || t == DataType::kFloat64 ||
         testing::fp8::isFloat8(t);
}
inline bool signedType(DataType t) { return t == DataType::kInt8 || t == DataType::kInt32 || t == DataType::kInt64; }

// ---- float16 / bfloat16 (IEEE round to nearest, ties to even)

/// float16 bits -> float (every float16 value is exact in float).
inline float halfBitsToFloat(std::uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0x1f) {
    v = man ? NAN : INFINITY;
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(man), -24);  // subnormal: man * 2^-24
  } else {
    v = std::ldexp(static_cast<double>(man | 0x400), exp - 25);
  }
  return static_cast<float>(sign ? -v : v);
}

/// double -> float16 bits, rounded once to nearest even (from double: no double rounding through float).
inline std::uint16_t doubleToHalfBits(double v) {
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return 0x7e00;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7c00;
  if (a == 0) return sign;
  int e = 0;
  (void)std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): the leading bit is 2^(e-1)
  // The spacing of float16 values near a: 2^(e-1-10), but never below the subnormal spacing 2^-24.
  const int spacingExp = std::max(e - 11, -24);
  const double scaled = std::ldexp(a, -spacingExp);  // exact: a power-of-two scaling
  double q = std::floor(scaled);
  const double rest = scaled - q;
  if (rest > 0.5 || (rest == 0.5 && std::fmod(q, 2) != 0)) q += 1;
  const double r = std::ldexp(q, spacingExp);
  if (r >= 65536.0 - 16) return sign | 0x7c00;  // 65520 and above round to infinity
  // Encode r exactly.
  if (r < std::ldexp(1.0, -14)) return sign | static_cast<std::uint16_t>(std::ldexp(r, 24));
  int re = 0;
  const double rm = std::frexp(r, &re);  // r = rm * 2^re
  const auto man = static_cast<std::uint16_t>(std::ldexp(rm, 11)) & 0x3ff;
  return sign | static_cast<std::uint16_t>((re - 1 + 15) << 10) | man;
}

inline float bf16BitsToFloat(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

/// double -> bfloat16 bits, rounded once to nearest even.
inline std::uint16_t doubleToBf16Bits(double v) {
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return 0x7fc0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7f80;
  if (a == 0) return sign;
  int e = 0;
  (void)std::frexp(a, &e);
  const int spacingExp = std::max(e - 8, -133);  // 8 significant bits; subnormal spacing 2^-133
  const double scaled = std::ldexp(a, -spacingExp);
  double q = std::floor(scaled);
  const double rest = scaled - q;
  if (rest > 0.5 || (rest == 0.5 && std::fmod(q, 2) != 0)) q += 1;
  const double r = std::ldexp(q, spacingExp);
  if (r >= std::ldexp(1.0, 128)) return sign | 0x7f80;
  // r is a bfloat16 value, hence a float with the low 16 bits clear: exact through float.
  return sign | static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(r)) >> 16);
}

// ---- elements in byte buffers

inline std::uint64_t bitsAt(const std::byte* p, std::size_t i, DataType t) {
  std::uint64_t v = 0;
  std::memcpy(&v, p + i * sizeOf(t), sizeOf(t));
  return v;
}
inline void putBitsAt(std::byte* p, std::size_t i, DataType t, std::uint64_t bits) {
  std::memcpy(p + i * sizeOf(t), &bits, sizeOf(t));
}

/// An integer element, sign-extended for signed types.
inline std::int64_t intAt(const std::byte* p, std::size_t i, DataType t) {
  const std::uint64_t b = bitsAt(p, i, t);
  switch (t) {
    case DataType::kInt8:
      return static_cast<std::int8_t>(b);
    case DataType::kInt32:
      return static_cast<std::int32_t>(b);
    default:
      return static_cast<std::int64_t>(b);
  }
}

/// A float element as double (exact).
inline double floatAt(const std::byte* p, std::size_t i, DataType t) {
  const std::uint64_t b = bitsAt(p, i, t);
  switch (t) {
    case DataType::kFloat16:
      return halfBitsToFloat(static_cast<std::uint16_t>(b));
    case DataType::kBFloat16:
      return bf16BitsToFloat(static_cast<std::uint16_t>(b));
    case DataType::kFloat32:
      return std::bit_cast<float>(static_cast<std::uint32_t>(b));
    case DataType::kFloat8E4M3:
    case DataType::kFloat8E5M2:
      return testing::fp8::decode(testing::fp8::formatOf(t), static_cast<std::uint8_t>(b));
    default:
      return std::bit_cast<double>(b);
  }
}

/// The bits of v rounded once (to nearest even) to the float type; float8 saturates, and a NaN is canonical.
inline std::uint64_t floatBitsOf(DataType t, double v) {
  switch (t) {
    case DataType::kFloat16:
      return doubleToHalfBits(v);
    case DataType::kBFloat16:
      return doubleToBf16Bits(v);
    case DataType::kFloat8E4M3:
    case DataType::kFloat8E5M2:
      return testing::fp8::encode(testing::fp8::formatOf(t), v);
    case DataType::kFloat32:
      return std::bit_cast<std::uint32_t>(static_cast<float>(v));
    default:
      return std::bit_cast<std::uint64_t>(v);
  }
}

/// The (type, op) pairs braid must accept, from the tests' own table (support/reduce_support.hpp).
inline constexpr DataType kTypes[] = {
    DataType::kBool,    DataType::kInt8,       DataType::kUint8,     DataType::kInt32,    DataType::kUint32,
    DataType::kInt64,   DataType::kUint64,     DataType::kFloat16,   DataType::kBFloat16, DataType::kFloat32,
    DataType::kFloat64, DataType::kFloat8E4M3, DataType::kFloat8E5M2};
inline constexpr ReduceKind kKinds[] = {ReduceKind::kSum,  ReduceKind::kProd, ReduceKind::kMin,
                                        ReduceKind::kMax,  ReduceKind::kAvg,  ReduceKind::kPremulSum,
                                        ReduceKind::kBand, ReduceKind::kBor,  ReduceKind::kBxor};
inline std::vector<ReduceKind> opsOf(DataType t) {
  std::vector<ReduceKind> ops;
  for (ReduceKind k : kKinds) {
    if (testing::expectReduceSupported(t, k)) ops.push_back(k);
  }
  return ops;
}

/// Element i of the reduction of `inputs` (one buffer per rank, each starting at its first element) by `kind`:
/// bool as logic (sum/max/or: any, prod/min/and: all, xor: parity) written as 0/1; integers with two's complement
/// wrap-around, bitwise ops on the raw bits, min/max by the type's signedness, avg as the exact sum divided by the
/// rank count, truncated toward zero; floats in float64 (exact for exact-sum inputs) rounded once to the type, avg
/// divided once. premul_sum multiplies every input by `premulScale` (the same on every rank) before summing.
inline std::uint64_t reduceAt(const std::vector<const std::byte*>& inputs, std::size_t i, DataType t, ReduceKind kind,
                              double premulScale = 1) {
  const int n = static_cast<int>(inputs.size());
  if (t == DataType::kBool) {
    return testing::foldBool(n, kind, [&](int r) { return bitsAt(inputs[static_cast<std::size_t>(r)], i, t) != 0; });
  }
  const std::uint64_t mask = sizeOf(t) == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * sizeOf(t))) - 1;
  if (!floatType(t)) {
    std::uint64_t acc = bitsAt(inputs[0], i, t);
    std::int64_t sacc = intAt(inputs[0], i, t);
    const auto scale = static_cast<std::int64_t>(premulScale);
    if (kind == ReduceKind::kPremulSum) acc *= static_cast<std::uint64_t>(scale);
    for (int r = 1; r < n; ++r) {
      const std::uint64_t b = bitsAt(inputs[static_cast<std::size_t>(r)], i, t);
      const std::int64_t s = intAt(inputs[static_cast<std::size_t>(r)], i, t);
      switch (kind) {
        case ReduceKind::kSum:
          acc += b;
          break;
        case ReduceKind::kPremulSum:
          acc += b * static_cast<std::uint64_t>(scale);
          break;
        case ReduceKind::kProd:
          acc *= b;
          break;
        case ReduceKind::kMin:
          if (signedType(t) ? s < sacc : b < acc) acc = b, sacc = s;
          break;
        case ReduceKind::kMax:
          if (signedType(t) ? s > sacc : b > acc) acc = b, sacc = s;
          break;
        case ReduceKind::kBand:
          acc &= b;
          break;
        case ReduceKind::kBor:
          acc |= b;
          break;
        case ReduceKind::kBxor:
          acc ^= b;
          break;
        case ReduceKind::kAvg:
          acc += b;
          break;
      }
    }
    if (kind == ReduceKind::kAvg) {
      // The sum wraps in the type like any integer sum, then divides, truncating toward zero.
      const std::uint64_t sum = acc & mask;
      if (!signedType(t)) return sum / static_cast<std::uint64_t>(n);
      const int shift = 64 - 8 * static_cast<int>(sizeOf(t));
      const std::int64_t signedSum = static_cast<std::int64_t>(sum << shift) >> shift;
      return static_cast<std::uint64_t>(signedSum / n) & mask;  // C++ division truncates toward zero
    }
    return acc & mask;
  }
  const double scale = kind == ReduceKind::kPremulSum ? premulScale : 1;
  const double acc =
      testing::foldFloat64(n, kind, [&](int r) { return floatAt(inputs[static_cast<std::size_t>(r)], i, t) * scale; });
  return floatBitsOf(t, acc);
}

/// True when got may stand for want: equal bits, or, for a float average, within one unit in the last place of the
/// type (float16/bfloat16/float8 averages divide in float32 and round again; a float32 quotient may be formed as a
/// product with 1/n). Anything else, a wrong op or an undivided sum included, is off by far more.
inline bool matches(DataType t, ReduceKind kind, std::uint64_t got, std::uint64_t want) {
  if (got == want) return true;
  if (kind != ReduceKind::kAvg || !floatType(t)) return false;
  std::byte g[8], w[8];
  std::memcpy(g, &got, 8);
  std::memcpy(w, &want, 8);
  const double gv = floatAt(g, 0, t), wv = floatAt(w, 0, t);
  const int bits = t == DataType::kFloat16     ? 11
                   : t == DataType::kBFloat16  ? 8
                   : t == DataType::kFloat32   ? 24
                   : testing::fp8::isFloat8(t) ? testing::fp8::formatOf(t).mantBits + 1
                                               : 53;
  int e = 0;
  (void)std::frexp(wv == 0 ? 1.0 : wv, &e);
  return std::fabs(gv - wv) <= std::ldexp(1.0, e - bits);
}

/// Element i of the sources folded in order, source 0 first, as braid documents its element-wise reductions: bool
/// and integers as reduceAt (avg divides by `avgDivisor`, after the sum wrapped in the type); floats accumulate in
/// float (float16, bfloat16, float8 and float32: each operation rounded to nearest even in float32) or double
/// (float64), avg divides the accumulated sum once by the divisor (converted to the accumulator type), min and max
/// keep a NaN from either side and otherwise the first operand only when strictly smaller (larger), so a tie of
/// signed zeros takes the later source; the result rounds once to the type (float8 saturating at its largest finite
/// value, infinities included) and every NaN is written as the type's canonical quiet NaN. premul_sum reduces as a
/// sum (its scaling happens before). Written for arbitrary inputs (NaN, infinities, subnormals, overflow), for the
/// device reduction tests that feed every special value.
inline std::uint64_t foldAt(const std::vector<const std::byte*>& srcs, std::size_t i, DataType t, ReduceKind kind,
                            int avgDivisor) {
  if (kind == ReduceKind::kPremulSum) kind = ReduceKind::kSum;
  if (!floatType(t)) {
    if (kind != ReduceKind::kAvg) return reduceAt(srcs, i, t, kind);
    const std::uint64_t mask = sizeOf(t) == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * sizeOf(t))) - 1;
    std::uint64_t sum = 0;
    for (const std::byte* src : srcs) sum += bitsAt(src, i, t);
    sum &= mask;
    if (!signedType(t)) return sum / static_cast<std::uint64_t>(avgDivisor);
    const int shift = 64 - 8 * static_cast<int>(sizeOf(t));
    const std::int64_t signedSum = static_cast<std::int64_t>(sum << shift) >> shift;
    return static_cast<std::uint64_t>(signedSum / avgDivisor) & mask;
  }
  auto fold = [&](auto acc, auto load) {
    using Acc = decltype(acc);
    for (std::size_t s = 1; s < srcs.size(); ++s) {
      const Acc b = load(srcs[s]);
      switch (kind) {
        case ReduceKind::kProd:
          acc = acc * b;
          break;
        case ReduceKind::kMin:
          acc = (acc < b || acc != acc) ? acc : b;
          break;
        case ReduceKind::kMax:
          acc = (acc > b || acc != acc) ? acc : b;
          break;
        default:
          acc = acc + b;
      }
    }
    if (kind == ReduceKind::kAvg) acc = acc / static_cast<Acc>(avgDivisor);
    return acc;
  };
  if (t == DataType::kFloat64) {
    const double r = fold(floatAt(srcs[0], i, t), [&](const std::byte* p) { return floatAt(p, i, t); });
    return r != r ? 0x7ff8000000000000ull : std::bit_cast<std::uint64_t>(r);
  }
  const float r = fold(static_cast<float>(floatAt(srcs[0], i, t)),
                       [&](const std::byte* p) { return static_cast<float>(floatAt(p, i, t)); });
  switch (t) {
    case DataType::kFloat16:
      return r != r ? 0x7e00u : doubleToHalfBits(r);
    case DataType::kBFloat16:
      return r != r ? 0x7fc0u : doubleToBf16Bits(r);
    case DataType::kFloat8E4M3:
    case DataType::kFloat8E5M2:
      return testing::fp8::encode(testing::fp8::formatOf(t), r);  // a NaN comes out canonical
    default:
      return r != r ? 0x7fc00000u : std::bit_cast<std::uint32_t>(r);
  }
}

/// An integral scale as the integer it multiplies by, modulo 2^64 (two's complement for negative scales).
inline std::uint64_t wrappedScale(double scale) {
  const double m = std::fmod(scale, 0x1p64);  // exact
  return m < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(-m) : static_cast<std::uint64_t>(m);
}

/// premul_sum's pre-scaling of one element, as braid documents it: bool stays true when the scale is non-zero;
/// integers multiply by the integral scale with wrap-around; float32 multiplies by the scale rounded to float (one
/// rounding of the exact product); float64 multiplies in double; float16/bfloat16/float8 form the exact product of
/// the value and the float scale and round it once to the type (float8 saturating). NaNs come out canonical.
inline std::uint64_t scaleAt(std::uint64_t bits, DataType t, double scale) {
  const std::uint64_t mask = sizeOf(t) == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * sizeOf(t))) - 1;
  if (t == DataType::kBool) return (bits & 0xff) != 0 && scale != 0 ? 1 : 0;
  if (!floatType(t)) return (bits * wrappedScale(scale)) & mask;
  std::byte e[8];
  std::memcpy(e, &bits, 8);
  const double v = floatAt(e, 0, t);
  if (t == DataType::kFloat64) {
    const double r = v * scale;
    return r != r ? 0x7ff8000000000000ull : std::bit_cast<std::uint64_t>(r);
  }
  const double product = v * static_cast<double>(static_cast<float>(scale));  // exact: 24 + 24 bits
  switch (t) {
    case DataType::kFloat16:
      return product != product ? 0x7e00u : doubleToHalfBits(product);
    case DataType::kBFloat16:
      return product != product ? 0x7fc0u : doubleToBf16Bits(product);
    case DataType::kFloat8E4M3:
    case DataType::kFloat8E5M2:
      return testing::fp8::encode(testing::fp8::formatOf(t), product);
    default: {
      const float r = static_cast<float>(product);
      return r != r ? 0x7fc00000u : std::bit_cast<std::uint32_t>(r);
    }
  }
}

inline std::string hexBits(std::uint64_t bits, std::size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int k = static_cast<int>(2 * size) - 1; k >= 0; --k) s += digits[(bits >> (4 * k)) & 0xf];
  return s;
}

/// Throws (failing the rank) unless every element of `got` matches the reduction of `inputs` at `from + j`.
inline void requireReduced(const std::byte* got, std::size_t count, const std::vector<const std::byte*>& inputs,
                           std::size_t from, DataType t, ReduceKind kind, double premulScale, const std::string& what) {
  std::vector<const std::byte*> at;
  for (const std::byte* in : inputs) at.push_back(in + from * sizeOf(t));
  std::size_t bad = 0, first = 0;
  std::uint64_t firstGot = 0, firstWant = 0;
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint64_t want = reduceAt(at, j, t, kind, premulScale);
    const std::uint64_t g = bitsAt(got, j, t);
    if (!matches(t, kind, g, want)) {
      if (bad++ == 0) first = j, firstGot = g, firstWant = want;
    }
  }
  if (bad != 0) {
    throw std::runtime_error(what + ": " + std::to_string(bad) + " of " + std::to_string(count) +
                             " elements differ from the reference; first element " + std::to_string(first) + ": got " +
                             hexBits(firstGot, sizeOf(t)) + ", expected " + hexBits(firstWant, sizeOf(t)));
  }
}

}  // namespace braid::gputest::ref
