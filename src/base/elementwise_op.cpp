#include "base/elementwise_op.hpp"

#include "base/data_type.hpp"
#include "base/error.hpp"

namespace braid {

ElementwiseOp resolveElementwiseOp(DataType type, ReduceKind kind, const char* caller) {
  if (!isValid(type))
    fail(ErrorCode::kInvalidArgument, {}, caller, ": invalid data type value ", static_cast<int>(type));
  if (!isValid(kind))
    fail(ErrorCode::kInvalidArgument, {}, caller, ": invalid reduce op value ", static_cast<int>(kind));
  const bool bitwise = kind == ReduceKind::kBand || kind == ReduceKind::kBor || kind == ReduceKind::kBxor;
  if (isFloating(type) && bitwise) {
    fail(ErrorCode::kInvalidArgument, {}, caller, ": reduce op ", reduceKindName(kind),
         " needs an integer or bool type, got ", dataTypeName(type));
  }
  if (type == DataType::kBool) {
    switch (kind) {
      case ReduceKind::kSum:
      case ReduceKind::kMax:
      case ReduceKind::kBor:
        return ElementwiseOp::kBor;
      case ReduceKind::kProd:
      case ReduceKind::kMin:
      case ReduceKind::kBand:
        return ElementwiseOp::kBand;
      case ReduceKind::kBxor:
        return ElementwiseOp::kBxor;
      default:
        fail(ErrorCode::kInvalidArgument, {}, caller, ": reduce op ", reduceKindName(kind), " is not defined for bool");
    }
  }
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kPremulSum:
      return ElementwiseOp::kSum;  // the scale was applied before reducing
    case ReduceKind::kProd:
      return ElementwiseOp::kProd;
    case ReduceKind::kMin:
      return ElementwiseOp::kMin;
    case ReduceKind::kMax:
      return ElementwiseOp::kMax;
    case ReduceKind::kAvg:
      return ElementwiseOp::kAvg;
    case ReduceKind::kBand:
      return ElementwiseOp::kBand;
    case ReduceKind::kBor:
      return ElementwiseOp::kBor;
    case ReduceKind::kBxor:
      return ElementwiseOp::kBxor;
  }
  fail(ErrorCode::kInternal, {}, caller, ": unhandled reduce op ", static_cast<int>(kind));
}

}  // namespace braid
