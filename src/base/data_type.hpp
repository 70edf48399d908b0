// Internal helpers around the public DataType / ReduceKind vocabulary.
#pragma once

#include <optional>
#include <string_view>

#include "braid/types.hpp"

namespace braid {

bool isValid(DataType type) noexcept;
bool isValid(ReduceKind kind) noexcept;
bool isFloating(DataType type) noexcept;
bool isInteger(DataType type) noexcept;  // bool excluded
bool isSigned(DataType type) noexcept;

/// Accepts braid's names (float32, float16, bfloat16, int32, ...) and nccl-tests' (float, half, double,
/// int, uint8, bfloat16, ...), and for the 8-bit floats fp8_e4m3, e4m3, float8_e4m3fn (PyTorch's name), fp8_e5m2
/// and e5m2. Case-insensitive.
std::optional<DataType> parseDataType(std::string_view name);
/// sum, prod, min, max, avg, premul_sum, band, bor, bxor.
std::optional<ReduceKind> parseReduceKind(std::string_view name);

/// Throws InvalidArgument when `kind` cannot apply to `type` (bitwise on floats, avg on bool, ...), or when a
/// premul-sum scale cannot be represented (non-integral scale on an integer type, non-finite scale).
void checkReduceSupported(DataType type, ReduceOp op, std::string_view opName);

}  // namespace braid
