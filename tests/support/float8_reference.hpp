// float8 e4m3 and e5m2 written out from their definition, for the tests: a code's value by the formula, a double
// rounded at the format's last place by nearbyint (to nearest even) and saturated at the largest finite value, the
// result found among the 256 codes. Shares nothing with base/float8.hpp or the kernels' copies, which the tests check
// against it.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "braid/types.hpp"

namespace braid::testing::fp8 {

struct Format {
  int expBits;
  int mantBits;
  int bias;
  bool hasInf;       // e5m2: exponent all ones is inf (mantissa 0) or NaN; e4m3: only S.1111.111 is NaN
  std::uint8_t nan;  // the canonical NaN braid writes
  double maxFinite;
};

inline constexpr Format kE4M3{4, 3, 7, false, 0x7f, 448.0};
inline constexpr Format kE5M2{5, 2, 15, true, 0x7e, 57344.0};

inline const Format& formatOf(DataType t) { return t == DataType::kFloat8E4M3 ? kE4M3 : kE5M2; }
inline bool isFloat8(DataType t) { return t == DataType::kFloat8E4M3 || t == DataType::kFloat8E5M2; }

/// The value of code b: NaN for NaN codes, +-inf for e5m2's infinities, -0.0 for 0x80.
inline double decode(const Format& f, std::uint8_t b) {
  const int maxExp = (1 << f.expBits) - 1;
  const int maxMant = (1 << f.mantBits) - 1;
  const int e = (b >> f.mantBits) & maxExp;
  const int m = b & maxMant;
  const double sign = (b & 0x80) != 0 ? -1.0 : 1.0;
  if (f.hasInf && e == maxExp) return m == 0 ? sign * INFINITY : NAN;
  if (!f.hasInf && e == maxExp && m == maxMant) return NAN;
  if (e == 0) return sign * std::ldexp(m, 1 - f.bias - f.mantBits);  // zero or subnormal
  return sign * std::ldexp(m + (1 << f.mantBits), e - f.bias - f.mantBits);
}

inline bool isNaNCode(const Format& f, std::uint8_t b) { return std::isnan(decode(f, b)); }

/// x rounded to the nearest value of the format, ties to the even mantissa; below the smallest normal the last
/// place stays that of the subnormals; beyond the largest finite value (infinities included) the result saturates
/// to +-maxFinite; NaN gives the canonical NaN; zero keeps its sign.
inline std::uint8_t encode(const Format& f, double x) {
  if (std::isnan(x)) return f.nan;
  double r = x;
  if (std::isfinite(x) && x != 0) {
    int e = 0;
    (void)std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
    const int minExp = 1 - f.bias;
    const int lastPlace = (e - 1 > minExp ? e - 1 : minExp) - f.mantBits;
    r = std::ldexp(std::nearbyint(std::ldexp(x, -lastPlace)), lastPlace);
  }
  if (std::fabs(r) > f.maxFinite) r = std::copysign(f.maxFinite, x);
  // The positive finite codes, 0x00 up to the largest finite one, have increasing values: search them.
  static const auto magnitudes = [](const Format& g) {
    std::array<double, 128> v{};
    for (int c = 0; c < 128; ++c) v[static_cast<std::size_t>(c)] = decode(g, static_cast<std::uint8_t>(c));
    return v;
  };
  static const std::array<double, 128> kE4M3Values = magnitudes(kE4M3), kE5M2Values = magnitudes(kE5M2);
  const std::array<double, 128>& values = f.hasInf ? kE5M2Values : kE4M3Values;
  const std::uint8_t sign = std::signbit(r) ? 0x80 : 0x00;
  const double magnitude = std::fabs(r);
  int lo = 0, hi = f.hasInf ? 0x7b : 0x7e;  // the largest finite code
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (values[static_cast<std::size_t>(mid)] < magnitude) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (values[static_cast<std::size_t>(lo)] != magnitude) {
    throw std::logic_error("float8 reference: no code holds the rounded value");
  }
  return static_cast<std::uint8_t>(sign | lo);
}

/// Every float32 where the rounding changes or might: each finite value, the midpoint to the next one and three
/// floats on either side of both, the same beyond the largest finite value (where the next value would lie),
/// overflow, inf, the subnormal range down to 0 and float's own subnormals; all with both signs; NaNs of every kind.
inline std::vector<float> roundingBoundaries(const Format& f) {
  std::vector<double> values;  // the positive finite values, increasing
  for (int code = 0; code < 128; ++code) {
    const double v = decode(f, static_cast<std::uint8_t>(code));
    if (std::isfinite(v)) values.push_back(v);
  }
  const double maxFinite = values.back();
  values.push_back(maxFinite + std::ldexp(1.0, std::ilogb(maxFinite) - f.mantBits));
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::vector<float> xs;
  auto around = [&](float x) {
    float below = x, above = x;
    for (int k = 0; k < 3; ++k) {
      below = std::nextafter(below, 0.0f);
      above = std::nextafter(above, kInf);
      xs.push_back(below);
      xs.push_back(above);
    }
    xs.push_back(x);
  };
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    around(static_cast<float>(values[i]));
    around(static_cast<float>((values[i] + values[i + 1]) / 2));  // exact: a few significant bits
  }
  around(static_cast<float>(values.back()));
  for (float x : {static_cast<float>(values[1]) / 4, 1e4f, 1e6f, 1e30f, std::numeric_limits<float>::max(), kInf,
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(), 1e-30f, 0.0f}) {
    around(x);
  }
  const std::size_t positives = xs.size();
  for (std::size_t i = 0; i < positives; ++i) xs.push_back(-xs[i]);
  for (std::uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffffffffu}) {
    xs.push_back(std::bit_cast<float>(nan));
  }
  return xs;
}

}  // namespace braid::testing::fp8
