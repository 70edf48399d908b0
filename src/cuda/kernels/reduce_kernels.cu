// The reduction kernels' lookup by (type, op, source count) and the premul-sum scale kernels with their
// instantiations; the reduction kernels themselves are instantiated in reduce_instances_*.cu.
#include <cstdint>

#include "cuda/kernels/reduce_kernels.cuh"

namespace braid::cuda::kernels {
namespace {

using detail::reduceKernelForType;

template <typename T>
const void* scaleKernelAddress() {
  return reinterpret_cast<const void*>(&detail::scaleCopyKernel<T>);
}

}  // namespace

const void* reduceKernelFor(DataType type, DeviceOp op, int nsrcs) {
  switch (type) {
    case DataType::kBool:
      return reduceKernelForType<device::Bool8>(op, nsrcs);
    case DataType::kInt8:
      return reduceKernelForType<std::int8_t>(op, nsrcs);
    case DataType::kUint8:
      return reduceKernelForType<std::uint8_t>(op, nsrcs);
    case DataType::kInt32:
      return reduceKernelForType<std::int32_t>(op, nsrcs);
    case DataType::kUint32:
      return reduceKernelForType<std::uint32_t>(op, nsrcs);
    case DataType::kInt64:
      return reduceKernelForType<std::int64_t>(op, nsrcs);
    case DataType::kUint64:
      return reduceKernelForType<std::uint64_t>(op, nsrcs);
    case DataType::kFloat16:
      return reduceKernelForType<__half>(op, nsrcs);
    case DataType::kBFloat16:
      return reduceKernelForType<__nv_bfloat16>(op, nsrcs);
    case DataType::kFloat32:
      return reduceKernelForType<float>(op, nsrcs);
    case DataType::kFloat64:
      return reduceKernelForType<double>(op, nsrcs);
    case DataType::kFloat8E4M3:
      return reduceKernelForType<__nv_fp8_e4m3>(op, nsrcs);
    case DataType::kFloat8E5M2:
      return reduceKernelForType<__nv_fp8_e5m2>(op, nsrcs);
  }
  return nullptr;
}

const void* scaleKernelFor(DataType type) {
  switch (type) {
    case DataType::kBool:
      return scaleKernelAddress<device::Bool8>();
    case DataType::kInt8:
      return scaleKernelAddress<std::int8_t>();
    case DataType::kUint8:
      return scaleKernelAddress<std::uint8_t>();
    case DataType::kInt32:
      return scaleKernelAddress<std::int32_t>();
    case DataType::kUint32:
      return scaleKernelAddress<std::uint32_t>();
    case DataType::kInt64:
      return scaleKernelAddress<std::int64_t>();
    case DataType::kUint64:
      return scaleKernelAddress<std::uint64_t>();
    case DataType::kFloat16:
      return scaleKernelAddress<__half>();
    case DataType::kBFloat16:
      return scaleKernelAddress<__nv_bfloat16>();
    case DataType::kFloat32:
      return scaleKernelAddress<float>();
    case DataType::kFloat64:
      return scaleKernelAddress<double>();
    case DataType::kFloat8E4M3:
      return scaleKernelAddress<__nv_fp8_e4m3>();
    case DataType::kFloat8E5M2:
      return scaleKernelAddress<__nv_fp8_e5m2>();
  }
  return nullptr;
}

}  // namespace braid::cuda::kernels
