#include "support/reduce_support.hpp"

namespace braid::testing {

namespace {

struct SupportRow {
  DataType type;
  bool ops[kNumReduceKinds];
};

// Bitwise ops only on integers and bool; avg and premul_sum on every type but bool.
// clang-format off
constexpr SupportRow kSupport[kNumDataTypes] = {
    //                       sum  prod  min  max  avg  premul_sum  band  bor  bxor
    {DataType::kBool,       {1,   1,    1,   1,   0,   0,          1,    1,   1}},
    {DataType::kInt8,       {1,   1,    1,   1,   1,   1,          1,    1,   1}},
    {DataType::kUint8,      {1,   1,    1,   1,   1,   1,          1,    1,   1}},
    {DataType::kInt32,      {1,   1,    1,   1,   1,   1,          1,    1,   1}},
    {DataType::kUint32,     {1,   1,    1,   1,   1,   1,          1,    1,   1}},
    {DataType::kInt64,      {1,   1,    1,   1,   1,   1,          1,    1,   1}},
    {DataType::kUint64,     {1,   1,    1,   1,   1,   1,          1,    1,   1}},
    {DataType::kFloat16,    {1,   1,    1,   1,   1,   1,          0,    0,   0}},
    {DataType::kBFloat16,   {1,   1,    1,   1,   1,   1,          0,    0,   0}},
    {DataType::kFloat32,    {1,   1,    1,   1,   1,   1,          0,    0,   0}},
    {DataType::kFloat64,    {1,   1,    1,   1,   1,   1,          0,    0,   0}},
    {DataType::kFloat8E4M3, {1,   1,    1,   1,   1,   1,          0,    0,   0}},
    {DataType::kFloat8E5M2, {1,   1,    1,   1,   1,   1,          0,    0,   0}},
};
// clang-format on

// The columns above follow the enum's numbering; a renumbered enum must not shift them silently.
static_assert(static_cast<int>(ReduceKind::kSum) == 0 && static_cast<int>(ReduceKind::kProd) == 1 &&
              static_cast<int>(ReduceKind::kMin) == 2 && static_cast<int>(ReduceKind::kMax) == 3 &&
              static_cast<int>(ReduceKind::kAvg) == 4 && static_cast<int>(ReduceKind::kPremulSum) == 5 &&
              static_cast<int>(ReduceKind::kBand) == 6 && static_cast<int>(ReduceKind::kBor) == 7 &&
              static_cast<int>(ReduceKind::kBxor) == 8 && kNumReduceKinds == 9);

constexpr bool rowsInEnumOrder() {
  for (int t = 0; t < kNumDataTypes; ++t) {
    if (static_cast<int>(kSupport[t].type) != t) return false;
  }
  return true;
}
static_assert(rowsInEnumOrder() && kNumDataTypes == 13);

}  // namespace

bool expectReduceSupported(DataType type, ReduceKind kind) {
  const int t = static_cast<int>(type), k = static_cast<int>(kind);
  return t >= 0 && t < kNumDataTypes && k >= 0 && k < kNumReduceKinds && kSupport[t].ops[k];
}

}  // namespace braid::testing
