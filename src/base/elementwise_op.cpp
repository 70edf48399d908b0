#include "base/elementwise_op.hpp"

#include "base/data_type.hpp"
#include "base/error.hpp"

namespace braid {

ElementwiseOp resolveElementwiseOp(DataType type, ReduceKind kind, const char* caller) {
  if (const std::optional<ElementwiseOp> op = elementwiseOpOf(type, kind)) return *op;
  // Refused: say why.
  if (!isValid(type))
    fail(ErrorCode::kInvalidArgument, {}, caller, ": invalid data type value ", static_cast<int>(type));
  if (!isValid(kind))
    fail(ErrorCode::kInvalidArgument, {}, caller, ": invalid reduce op value ", static_cast<int>(kind));
  if (type == DataType::kBool) {
    fail(ErrorCode::kInvalidArgument, {}, caller, ": reduce op ", reduceKindName(kind), " is not defined for bool");
  }
  fail(ErrorCode::kInvalidArgument, {}, caller, ": reduce op ", reduceKindName(kind),
       " needs an integer or bool type, got ", dataTypeName(type));
}

}  // namespace braid
