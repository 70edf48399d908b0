// Internal helpers around the public DataType / ReduceKind vocabulary (braid/elements.hpp names and parses them).
#pragma once

#include <optional>
#include <string_view>

#include "braid/elements.hpp"
#include "braid/types.hpp"

namespace braid {

bool isValid(DataType type) noexcept;
bool isValid(ReduceKind kind) noexcept;

/// Throws InvalidArgument when `kind` cannot apply to `type` (bitwise on floats, avg on bool, ...), or when a
/// premul-sum scale cannot be represented (non-integral scale on an integer type, non-finite scale).
void checkReduceSupported(DataType type, ReduceOp op, std::string_view opName);
/// The same, failing with the call's whole context (rank, op, sequence number).
void checkReduceSupported(DataType type, ReduceOp op, const ErrorContext& context);

}  // namespace braid
