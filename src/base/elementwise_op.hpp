// The operator an element-wise reduction kernel applies, once a (DataType, ReduceKind) pair is checked and its
// aliases resolved. Shared by the CPU kernels and the GPU kernels so that both refuse and alias alike.
#pragma once

#include <cstdint>

#include "braid/types.hpp"

namespace braid {

enum class ElementwiseOp : std::uint8_t { kSum, kProd, kMin, kMax, kAvg, kBand, kBor, kBxor };
inline constexpr int kNumElementwiseOps = 8;

/// premul_sum -> sum (the scale is applied before reducing); on bool sum/max -> or, prod/min -> and.
/// Throws InvalidArgument, naming `caller`, for invalid values, bitwise ops on floats, and avg/premul_sum on bool.
ElementwiseOp resolveElementwiseOp(DataType type, ReduceKind kind, const char* caller);

}  // namespace braid
