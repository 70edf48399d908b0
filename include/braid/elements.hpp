// Elements of every DataType as numbers, and the names of types and reductions as text: for programs that fill and
// check buffers of any type (braid bench, tests, users' own checks). Reads and writes go through double: exact for
// integers up to 2^53 and for every value of the 8-, 16- and 32-bit float types; integers are stored modulo 2^bits,
// as braid's wrapping arithmetic produces, and floats rounded to nearest even. One call per element: not for hot
// paths.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "braid/types.hpp"

namespace braid {

/// Element `i` of a buffer of `type`.
double loadElement(const void* buf, std::size_t i, DataType type);
/// Writes `value` as element `i` of a buffer of `type`.
void storeElement(void* buf, std::size_t i, DataType type, double value);

/// Accepts braid's names (float32, float16, bfloat16, int32, ...) and nccl-tests' (float, half, double, int, uint8,
/// bfloat16, ...), and for the 8-bit floats fp8_e4m3, e4m3, float8_e4m3fn (PyTorch's name), fp8_e5m2 and e5m2.
/// Case-insensitive.
std::optional<DataType> parseDataType(std::string_view name);
/// sum, prod, min, max, avg, premul_sum, band, bor, bxor.
std::optional<ReduceKind> parseReduceKind(std::string_view name);

bool isFloating(DataType type) noexcept;
bool isInteger(DataType type) noexcept;  ///< bool excluded
bool isSigned(DataType type) noexcept;

}  // namespace braid
