#include "mpi_types.hpp"

#include <utility>

#if defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_C_FLOAT16 / MPIX_SHORT_FLOAT where built with "shortfloat"
#endif

namespace braid::mpi {

std::optional<DataType> braidType(MPI_Datatype type) {
  // Handles of predefined types compare equal to their names; integer types by width, as C defines them here.
  const std::pair<MPI_Datatype, DataType> table[] = {
      {MPI_FLOAT, DataType::kFloat32},
      {MPI_DOUBLE, DataType::kFloat64},
      {MPI_C_BOOL, DataType::kBool},
      {MPI_CHAR, DataType::kInt8},
      {MPI_SIGNED_CHAR, DataType::kInt8},
      {MPI_INT8_T, DataType::kInt8},
      {MPI_UNSIGNED_CHAR, DataType::kUint8},
      {MPI_UINT8_T, DataType::kUint8},
      {MPI_BYTE, DataType::kUint8},
      {MPI_INT, sizeof(int) == 4 ? DataType::kInt32 : DataType::kInt64},
      {MPI_INT32_T, DataType::kInt32},
      {MPI_UNSIGNED, sizeof(unsigned) == 4 ? DataType::kUint32 : DataType::kUint64},
      {MPI_UINT32_T, DataType::kUint32},
      {MPI_LONG, sizeof(long) == 8 ? DataType::kInt64 : DataType::kInt32},
      {MPI_UNSIGNED_LONG, sizeof(unsigned long) == 8 ? DataType::kUint64 : DataType::kUint32},
      {MPI_LONG_LONG_INT, DataType::kInt64},
      {MPI_LONG_LONG, DataType::kInt64},
      {MPI_INT64_T, DataType::kInt64},
      {MPI_UNSIGNED_LONG_LONG, DataType::kUint64},
      {MPI_UINT64_T, DataType::kUint64},
  // The 16-bit float types MPIs define as extensions (MPICH: MPIX_C_FLOAT16, MPIX_BFLOAT16; Open MPI's shortfloat
  // extension: MPIX_C_FLOAT16, MPIX_SHORT_FLOAT). Debian's Open MPI 4.1 has none of them.
#ifdef MPIX_C_FLOAT16
      {MPIX_C_FLOAT16, DataType::kFloat16},
#endif
#ifdef MPIX_SHORT_FLOAT
      {MPIX_SHORT_FLOAT, DataType::kFloat16},
#endif
#ifdef MPIX_BFLOAT16
      {MPIX_BFLOAT16, DataType::kBFloat16},
#endif
  };
  for (const auto& [mpiType, braid] : table) {
    if (type == mpiType) return braid;
  }
  return std::nullopt;
}

std::optional<ReduceKind> braidOp(MPI_Op op, DataType type) {
  const std::pair<MPI_Op, ReduceKind> table[] = {
      {MPI_SUM, ReduceKind::kSum},   {MPI_PROD, ReduceKind::kProd}, {MPI_MIN, ReduceKind::kMin},
      {MPI_MAX, ReduceKind::kMax},   {MPI_BAND, ReduceKind::kBand}, {MPI_BOR, ReduceKind::kBor},
      {MPI_BXOR, ReduceKind::kBxor},
  };
  for (const auto& [mpiOp, kind] : table) {
    if (op != mpiOp) continue;
    if (!reductionSupported(type, kind)) return std::nullopt;
    return kind;
  }
  return std::nullopt;
}

}  // namespace braid::mpi
