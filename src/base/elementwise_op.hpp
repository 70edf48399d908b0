// The operator an element-wise reduction kernel applies, once a (DataType, ReduceKind) pair is checked and its
// aliases resolved. Shared by the CPU kernels and the GPU kernels so that both refuse and alias alike.
#pragma once

#include <cstdint>
#include <optional>

#include "base/data_type.hpp"
#include "braid/types.hpp"

namespace braid {

enum class ElementwiseOp : std::uint8_t { kSum, kProd, kMin, kMax, kAvg, kBand, kBor, kBxor };
inline constexpr int kNumElementwiseOps = 8;

/// premul_sum -> sum (the scale is applied before reducing); on bool sum/max -> or, prod/min -> and.
/// Throws InvalidArgument, naming `caller`, for invalid values, bitwise ops on floats, and avg/premul_sum on bool.
ElementwiseOp resolveElementwiseOp(DataType type, ReduceKind kind, const char* caller);

/// resolveElementwiseOp's answer, nullopt where it refuses, worked out at compile time: a kernel table holds every
/// pair's answer from the start, and a small reduction spends nothing on checks and messages.
constexpr std::optional<ElementwiseOp> elementwiseOpOf(DataType type, ReduceKind kind) {
  if (!isValid(type) || !isValid(kind)) return std::nullopt;
  const bool floating = isFloatingType(type);
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kMax:
      return type == DataType::kBool ? ElementwiseOp::kBor
                                     : (kind == ReduceKind::kSum ? ElementwiseOp::kSum : ElementwiseOp::kMax);
    case ReduceKind::kProd:
    case ReduceKind::kMin:
      return type == DataType::kBool ? ElementwiseOp::kBand
                                     : (kind == ReduceKind::kProd ? ElementwiseOp::kProd : ElementwiseOp::kMin);
    case ReduceKind::kPremulSum:  // the scale was applied before reducing
    case ReduceKind::kAvg:
      if (type == DataType::kBool) return std::nullopt;
      return kind == ReduceKind::kAvg ? ElementwiseOp::kAvg : ElementwiseOp::kSum;
    case ReduceKind::kBand:
      return floating ? std::nullopt : std::optional(ElementwiseOp::kBand);
    case ReduceKind::kBor:
      return floating ? std::nullopt : std::optional(ElementwiseOp::kBor);
    case ReduceKind::kBxor:
      return floating ? std::nullopt : std::optional(ElementwiseOp::kBxor);
  }
  return std::nullopt;
}

}  // namespace braid
