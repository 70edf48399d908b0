// The interposer's dispatch (mpi/mpi_types.cpp): which MPI datatypes and ops braid runs itself, and which go to
// the MPI through host memory.
#include "mpi_types.hpp"

#include <gtest/gtest.h>

namespace braid::mpi {
namespace {

TEST(MpiInterposer, PredefinedTypesMapToBraidsByWidth) {
  EXPECT_EQ(braidType(MPI_FLOAT), DataType::kFloat32);
  EXPECT_EQ(braidType(MPI_DOUBLE), DataType::kFloat64);
  EXPECT_EQ(braidType(MPI_INT), DataType::kInt32);
  EXPECT_EQ(braidType(MPI_UNSIGNED_LONG), DataType::kUint64);
  EXPECT_EQ(braidType(MPI_INT8_T), DataType::kInt8);
  EXPECT_EQ(braidType(MPI_BYTE), DataType::kUint8);
  EXPECT_EQ(braidType(MPI_C_BOOL), DataType::kBool);
  EXPECT_EQ(braidType(MPI_SHORT), std::nullopt);  // braid has no 16-bit integers: staged
  EXPECT_EQ(braidType(MPI_LONG_DOUBLE), std::nullopt);
  MPI_Datatype pair = MPI_DATATYPE_NULL;
  ASSERT_EQ(MPI_Type_contiguous(2, MPI_FLOAT, &pair), MPI_SUCCESS);
  EXPECT_EQ(braidType(pair), std::nullopt);  // derived: staged
  MPI_Type_free(&pair);
}

TEST(MpiInterposer, OpsMapWhereTheTypeSupportsThem) {
  EXPECT_EQ(braidOp(MPI_SUM, DataType::kFloat32), ReduceKind::kSum);
  EXPECT_EQ(braidOp(MPI_MAX, DataType::kInt64), ReduceKind::kMax);
  EXPECT_EQ(braidOp(MPI_BXOR, DataType::kUint32), ReduceKind::kBxor);
  EXPECT_EQ(braidOp(MPI_BAND, DataType::kFloat32), std::nullopt);  // no bitwise ops on floats
  EXPECT_EQ(braidOp(MPI_LAND, DataType::kInt32), std::nullopt);    // logical ops: staged
  EXPECT_EQ(braidOp(MPI_MAXLOC, DataType::kFloat32), std::nullopt);
}

}  // namespace
}  // namespace braid::mpi

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
