// Which reduce ops braid defines on which data types, as braid/types.hpp documents them, written out here and not
// asked of the library: an op the library wrongly refused would otherwise drop out of every test matrix unseen.
#pragma once

#include <cmath>

#include "braid/types.hpp"

namespace braid::testing {

/// True when `kind` on `type` must be accepted (a premul_sum with an integral scale on integer types).
bool expectReduceSupported(DataType type, ReduceKind kind);

/// bool reduced as logic over n values (`value(r)`, r = 0..n-1): sum, max and bor are "any", bxor is parity, every
/// other op "all".
template <typename Value>
bool foldBool(int n, ReduceKind kind, Value&& value) {
  bool any = false, all = true, parity = false;
  for (int r = 0; r < n; ++r) {
    const bool v = value(r);
    any |= v;
    all &= v;
    parity ^= v;
  }
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kMax:
    case ReduceKind::kBor:
      return any;
    case ReduceKind::kBxor:
      return parity;
    default:
      return all;
  }
}

/// The float64 reference of n values (`value(r)`, r = 0..n-1) folded in order: prod multiplies, min and max keep
/// the smaller (larger), every other op adds; avg divides the sum once by n. `magnitudes`, when given, gets the sum
/// of the values' magnitudes (what the error bound of a sum scales with).
template <typename Value>
double foldFloat64(int n, ReduceKind kind, Value&& value, double* magnitudes = nullptr) {
  double acc = value(0), mags = std::fabs(acc);
  for (int r = 1; r < n; ++r) {
    const double v = value(r);
    mags += std::fabs(v);
    switch (kind) {
      case ReduceKind::kProd:
        acc *= v;
        break;
      case ReduceKind::kMin:
        acc = std::fmin(acc, v);
        break;
      case ReduceKind::kMax:
        acc = std::fmax(acc, v);
        break;
      default:
        acc += v;
    }
  }
  if (kind == ReduceKind::kAvg) acc /= n;
  if (magnitudes != nullptr) *magnitudes = mags;
  return acc;
}

}  // namespace braid::testing
