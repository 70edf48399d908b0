#include "base/data_type.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "base/error.hpp"

namespace braid {

namespace {

struct TypeRow {
  DataType type;
  const char* name;
};

// Index = numeric value of DataType.
constexpr TypeRow kTypes[kNumDataTypes] = {
    {DataType::kBool, "bool"},
    {DataType::kInt8, "int8"},
    {DataType::kUint8, "uint8"},
    {DataType::kInt32, "int32"},
    {DataType::kUint32, "uint32"},
    {DataType::kInt64, "int64"},
    {DataType::kUint64, "uint64"},
    {DataType::kFloat16, "float16"},
    {DataType::kBFloat16, "bfloat16"},
    {DataType::kFloat32, "float32"},
    {DataType::kFloat64, "float64"},
    {DataType::kFloat8E4M3, "float8_e4m3"},
    {DataType::kFloat8E5M2, "float8_e5m2"},
};

static_assert(dataTypeSize(DataType::kBool) == sizeof(bool) && dataTypeSize(DataType::kInt32) == 4 &&
              dataTypeSize(DataType::kUint64) == 8 && dataTypeSize(DataType::kBFloat16) == 2 &&
              dataTypeSize(DataType::kFloat64) == sizeof(double) && dataTypeSize(DataType::kFloat8E5M2) == 1 &&
              dataTypeSize(static_cast<DataType>(kNumDataTypes)) == 0);

constexpr const char* kReduceNames[kNumReduceKinds] = {"sum",        "prod", "min", "max", "avg",
                                                       "premul_sum", "band", "bor", "bxor"};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

const char* dataTypeName(DataType type) noexcept {
  return isValid(type) ? kTypes[static_cast<unsigned>(type)].name : "invalid-dtype";
}

const char* reduceKindName(ReduceKind kind) noexcept {
  return isValid(kind) ? kReduceNames[static_cast<unsigned>(kind)] : "invalid-op";
}

bool isFloating(DataType type) noexcept { return isFloatingType(type); }

bool isInteger(DataType type) noexcept { return isValid(type) && type != DataType::kBool && !isFloating(type); }

bool isSigned(DataType type) noexcept {
  return type == DataType::kInt8 || type == DataType::kInt32 || type == DataType::kInt64 || isFloating(type);
}

std::optional<DataType> parseDataType(std::string_view name) {
  const std::string n = lower(name);
  for (const auto& row : kTypes) {
    if (n == row.name) return row.type;
  }
  // nccl-tests' spellings and common aliases. PyTorch's float8_e4m3fn is braid's float8_e4m3: "fn" (finite, NaN only
  // at S.1111.111) is the only e4m3 braid has.
  struct Alias {
    const char* name;
    DataType type;
  };
  static constexpr Alias kAliases[] = {
      {"float", DataType::kFloat32},       {"half", DataType::kFloat16},
      {"double", DataType::kFloat64},      {"int", DataType::kInt32},
      {"uint", DataType::kUint32},         {"char", DataType::kInt8},
      {"fp32", DataType::kFloat32},        {"fp16", DataType::kFloat16},
      {"bf16", DataType::kBFloat16},       {"fp64", DataType::kFloat64},
      {"long", DataType::kInt64},          {"ulong", DataType::kUint64},
      {"byte", DataType::kUint8},          {"fp8_e4m3", DataType::kFloat8E4M3},
      {"e4m3", DataType::kFloat8E4M3},     {"float8_e4m3fn", DataType::kFloat8E4M3},
      {"fp8_e5m2", DataType::kFloat8E5M2}, {"e5m2", DataType::kFloat8E5M2},
  };
  for (const auto& alias : kAliases) {
    if (n == alias.name) return alias.type;
  }
  return std::nullopt;
}

std::optional<ReduceKind> parseReduceKind(std::string_view name) {
  const std::string n = lower(name);
  for (int i = 0; i < kNumReduceKinds; ++i) {
    if (n == kReduceNames[i]) return static_cast<ReduceKind>(i);
  }
  if (n == "premulsum") return ReduceKind::kPremulSum;
  if (n == "product") return ReduceKind::kProd;
  return std::nullopt;
}

namespace {

// `context()` gives the failure's context: made only for a failure, since this check runs on every reducing call.
template <typename Context>
void checkReduce(DataType type, ReduceOp op, const Context& context) {
  if (!isValid(type)) fail(ErrorCode::kInvalidArgument, context(), "invalid data type value ", static_cast<int>(type));
  if (!isValid(op.kind)) {
    fail(ErrorCode::kInvalidArgument, context(), "invalid reduce op value ", static_cast<int>(op.kind));
  }
  const bool bitwise = op.kind == ReduceKind::kBand || op.kind == ReduceKind::kBor || op.kind == ReduceKind::kBxor;
  if (bitwise && isFloating(type)) {
    fail(ErrorCode::kInvalidArgument, context(), "reduce op ", reduceKindName(op.kind),
         " needs an integer or bool type, got ", dataTypeName(type));
  }
  if (type == DataType::kBool && (op.kind == ReduceKind::kAvg || op.kind == ReduceKind::kPremulSum)) {
    fail(ErrorCode::kInvalidArgument, context(), "reduce op ", reduceKindName(op.kind), " is not defined for bool");
  }
  if (op.kind == ReduceKind::kPremulSum) {
    if (!std::isfinite(op.scale)) {
      fail(ErrorCode::kInvalidArgument, context(), "premul_sum scale is not finite: ", op.scale);
    }
    if (isInteger(type) && std::trunc(op.scale) != op.scale) {
      fail(ErrorCode::kInvalidArgument, context(), "premul_sum on ", dataTypeName(type),
           " needs an integral scale, got ", op.scale);
    }
  }
}

}  // namespace

void checkReduceSupported(DataType type, ReduceOp op, std::string_view opName) {
  checkReduce(type, op, [opName] { return ErrorContext{.op = std::string(opName)}; });
}

void detail::checkReduceSupportedFully(DataType type, ReduceOp op, const CallContext& context) {
  checkReduce(type, op, [&context]() -> const CallContext& { return context; });
}

}  // namespace braid
