// NCCL's data types and reduction operators as braid's.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "braid/types.hpp"

namespace braid::nccl {

/// braid's type for `type` (ncclFloat8e4m3 and ncclFloat8e5m2 included). Throws InvalidArgument for a value nccl.h
/// does not define.
DataType dataTypeOf(ncclDataType_t type);

/// braid's operator for `op` on `comm`: a built-in one, or a premul_sum made by ncclRedOpCreatePreMulSum whose
/// scalar is read now (a device-resident scalar is copied from the GPU on `stream` and waited for). Throws
/// InvalidArgument for an operator that does not exist on `comm`.
ReduceOp reduceOpOf(ncclComm_t comm, ncclRedOp_t op, cudaStream_t stream);

/// `scalar` of type `type` in host memory, as a double.
double scalarValue(const void* scalar, ncclDataType_t type);

}  // namespace braid::nccl
