// How the backend sees torch tensors: braid's dtype and reduce op for them, a dense buffer for any tensor (and the
// copy back into a non-contiguous one), and the argument checks every op shares.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <vector>

#include "braid/braid.hpp"

namespace braid_torch {

inline braid::DataType dataTypeOf(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return braid::DataType::kFloat32;
    case at::kDouble:
      return braid::DataType::kFloat64;
    case at::kHalf:
      return braid::DataType::kFloat16;
    case at::kBFloat16:
      return braid::DataType::kBFloat16;
    case at::kInt:
      return braid::DataType::kInt32;
    case at::kLong:
      return braid::DataType::kInt64;
    case at::kChar:
      return braid::DataType::kInt8;
    case at::kByte:
      return braid::DataType::kUint8;
    case at::kBool:
      return braid::DataType::kBool;
    case at::kUInt32:
      return braid::DataType::kUint32;
    case at::kUInt64:
      return braid::DataType::kUint64;
    // The fnuz float8 variants (another bias, NaN at 0x80, no negative zero) are not braid's types.
    case at::kFloat8_e4m3fn:
      return braid::DataType::kFloat8E4M3;
    case at::kFloat8_e5m2:
      return braid::DataType::kFloat8E5M2;
    default:
      TORCH_CHECK(false, "braid: tensors of dtype ", t.scalar_type(),
                  " are not supported (float32, float64, float16, bfloat16, float8_e4m3fn, float8_e5m2, int8, uint8, "
                  "int32, uint32, int64, uint64, bool)");
  }
}

inline braid::ReduceOp reduceOpOf(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return braid::ReduceKind::kSum;
    case c10d::ReduceOp::AVG:
      return braid::ReduceKind::kAvg;
    case c10d::ReduceOp::PRODUCT:
      return braid::ReduceKind::kProd;
    case c10d::ReduceOp::MIN:
      return braid::ReduceKind::kMin;
    case c10d::ReduceOp::MAX:
      return braid::ReduceKind::kMax;
    case c10d::ReduceOp::BAND:
      return braid::ReduceKind::kBand;
    case c10d::ReduceOp::BOR:
      return braid::ReduceKind::kBor;
    case c10d::ReduceOp::BXOR:
      return braid::ReduceKind::kBxor;
    case c10d::ReduceOp::PREMUL_SUM: {
      const auto* s = dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(s != nullptr, "braid: PREMUL_SUM without its factor");
      const double factor = s->tensor_factor.defined() ? s->tensor_factor.item<double>() : s->double_factor;
      return braid::ReduceOp::premulSum(factor);
    }
    default:
      TORCH_CHECK(false, "braid: reduce op ", static_cast<int>(op.op_), " is not supported");
  }
}

// A tensor as one dense buffer: itself when contiguous, else a contiguous copy that goes back when done.
class Dense {
 public:
  explicit Dense(at::Tensor t) : original_(std::move(t)), dense_(original_.contiguous()) {}
  void* data() { return dense_.data_ptr(); }
  std::size_t count() const { return static_cast<std::size_t>(dense_.numel()); }
  braid::DataType type() const { return dataTypeOf(dense_); }
  /// Writes the result back into a non-contiguous original.
  void finish() {
    if (!dense_.is_same(original_)) original_.copy_(dense_);
  }
  const at::Tensor& tensor() const { return dense_; }
  /// Both tensors, to keep alive until the op ends.
  std::vector<at::Tensor> tensors() const { return {original_, dense_}; }

 private:
  at::Tensor original_;
  at::Tensor dense_;
};

inline void requireOne(const std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "braid: ", op, " takes one tensor per rank, got ", tensors.size());
}

// An output read as the input's type: braid takes one type a call, so a float64 output of a float32 input would be
// written with float32 values and read past the input's end.
inline void requireSameType(const at::Tensor& output, const at::Tensor& input, const char* op) {
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "braid: ", op, ": the output is ", output.scalar_type(),
              " and the input ", input.scalar_type(), "; they must be of one type");
}

inline void requireSameShape(const std::vector<at::Tensor>& list, const at::Tensor& like, const char* op) {
  for (const auto& t : list) {
    TORCH_CHECK(t.numel() == like.numel() && t.scalar_type() == like.scalar_type(), "braid: ", op,
                ": every tensor of the list must match the input (", like.numel(), " x ", like.scalar_type(), "), got ",
                t.numel(), " x ", t.scalar_type());
  }
}

}  // namespace braid_torch
