// Internal helpers around the public DataType / ReduceKind vocabulary (braid/elements.hpp names and parses them).
#pragma once

#include <optional>
#include <string_view>

#include "base/error.hpp"
#include "braid/elements.hpp"
#include "braid/types.hpp"

namespace braid {

constexpr bool isValid(DataType type) noexcept { return static_cast<unsigned>(type) < kNumDataTypes; }
constexpr bool isValid(ReduceKind kind) noexcept { return static_cast<unsigned>(kind) < kNumReduceKinds; }
/// braid::isFloating, at compile time (the public one is out of line).
constexpr bool isFloatingType(DataType type) noexcept {
  return type == DataType::kFloat16 || type == DataType::kBFloat16 || type == DataType::kFloat32 ||
         type == DataType::kFloat64 || type == DataType::kFloat8E4M3 || type == DataType::kFloat8E5M2;
}

/// Throws InvalidArgument when `type` is no data type or `kind` cannot apply to it (bitwise on floats, avg on bool,
/// ...), or when a premul-sum scale cannot be represented (non-integral scale on an integer type, non-finite scale).
void checkReduceSupported(DataType type, ReduceOp op, std::string_view opName);

namespace detail {
void checkReduceSupportedFully(DataType type, ReduceOp op, const CallContext& context);
}  // namespace detail

/// The same, failing with the call's whole context (rank, op, sequence number). Inline: every reducing call asks,
/// and sum, prod, min and max apply to every type, so most calls need two comparisons.
inline void checkReduceSupported(DataType type, ReduceOp op, const CallContext& context) {
  if (isValid(type) && op.kind <= ReduceKind::kMax) [[likely]]
    return;
  detail::checkReduceSupportedFully(type, op, context);
}

}  // namespace braid
