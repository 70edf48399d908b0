#include "types.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "comm.hpp"

namespace braid::nccl {

namespace {

// IEEE half and bfloat16 bit patterns as doubles (exactly: every value of both fits a double).
double halfToDouble(std::uint16_t bits) {
  const int sign = (bits >> 15) != 0 ? -1 : 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa != 0 ? NAN : sign * INFINITY;
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

double bfloat16ToDouble(std::uint16_t bits) {
  const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
  float f = 0;
  std::memcpy(&f, &wide, 4);
  return f;
}

// float8 bit patterns as doubles: e4m3 (bias 7, no infinities, S.1111.111 its only NaN) and e5m2 (the top byte of a
// float16).
double float8E4M3ToDouble(std::uint8_t bits) {
  const int sign = (bits >> 7) != 0 ? -1 : 1;
  const int exponent = (bits >> 3) & 0xf;
  const int mantissa = bits & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return NAN;
  if (exponent == 0) return sign * std::ldexp(mantissa, -9);
  return sign * std::ldexp(mantissa + 8, exponent - 10);
}

double float8E5M2ToDouble(std::uint8_t bits) { return halfToDouble(static_cast<std::uint16_t>(bits << 8)); }

template <typename T>
double read(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

}  // namespace

DataType dataTypeOf(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
      return DataType::kInt8;
    case ncclUint8:
      return DataType::kUint8;
    case ncclInt32:
      return DataType::kInt32;
    case ncclUint32:
      return DataType::kUint32;
    case ncclInt64:
      return DataType::kInt64;
    case ncclUint64:
      return DataType::kUint64;
    case ncclFloat16:
      return DataType::kFloat16;
    case ncclFloat32:
      return DataType::kFloat32;
    case ncclFloat64:
      return DataType::kFloat64;
    case ncclBfloat16:
      return DataType::kBFloat16;
    case ncclFloat8e4m3:
      return DataType::kFloat8E4M3;
    case ncclFloat8e5m2:
      return DataType::kFloat8E5M2;
    default:
      break;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "data type " + std::to_string(static_cast<int>(type)) + " is not an ncclDataType_t");
}

double scalarValue(const void* scalar, ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
      return read<std::int8_t>(scalar);
    case ncclUint8:
      return read<std::uint8_t>(scalar);
    case ncclInt32:
      return read<std::int32_t>(scalar);
    case ncclUint32:
      return read<std::uint32_t>(scalar);
    case ncclInt64:
      return read<std::int64_t>(scalar);
    case ncclUint64:
      return read<std::uint64_t>(scalar);
    case ncclFloat16:
      return halfToDouble(static_cast<std::uint16_t>(read<std::uint16_t>(scalar)));
    case ncclBfloat16:
      return bfloat16ToDouble(static_cast<std::uint16_t>(read<std::uint16_t>(scalar)));
    case ncclFloat32:
      return read<float>(scalar);
    case ncclFloat64:
      return read<double>(scalar);
    case ncclFloat8e4m3:
      return float8E4M3ToDouble(static_cast<std::uint8_t>(read<std::uint8_t>(scalar)));
    case ncclFloat8e5m2:
      return float8E5M2ToDouble(static_cast<std::uint8_t>(read<std::uint8_t>(scalar)));
    default:
      (void)dataTypeOf(type);  // throws, naming the type
      return 0;
  }
}

ReduceOp reduceOpOf(ncclComm_t comm, ncclRedOp_t op, cudaStream_t stream) {
  switch (op) {
    case ncclSum:
      return ReduceKind::kSum;
    case ncclProd:
      return ReduceKind::kProd;
    case ncclMax:
      return ReduceKind::kMax;
    case ncclMin:
      return ReduceKind::kMin;
    case ncclAvg:
      return ReduceKind::kAvg;
    default:
      break;
  }
  const auto index = static_cast<std::size_t>(op) - static_cast<std::size_t>(ncclNumOps);
  ncclComm::PremulOp made;
  {
    std::lock_guard lock(comm->opsMu);
    if (static_cast<int>(op) < static_cast<int>(ncclNumOps) || index >= comm->ops.size() || !comm->ops[index].live) {
      throw Error(ErrorCode::kInvalidArgument, "reduction operator " + std::to_string(static_cast<int>(op)) +
                                                   " is neither built in nor made on this communicator by "
                                                   "ncclRedOpCreatePreMulSum");
    }
    made = comm->ops[index];
  }
  if (!made.onDevice) return ReduceOp::premulSum(made.scale);
  // The scalar lies on the GPU and may change between calls: read it after the work queued before this call.
  unsigned char bytes[8] = {};
  const cudaError_t copied =
      cudaMemcpyAsync(bytes, made.device, dataTypeSize(dataTypeOf(made.type)), cudaMemcpyDeviceToHost, stream);
  const cudaError_t waited = copied == cudaSuccess ? cudaStreamSynchronize(stream) : copied;
  if (waited != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(ErrorCode::kInvalidArgument,
                std::string("cannot read the device-resident scalar of premul_sum operator ") +
                    std::to_string(static_cast<int>(op)) + ": " + cudaGetErrorString(waited));
  }
  return ReduceOp::premulSum(scalarValue(bytes, made.type));
}

}  // namespace braid::nccl
