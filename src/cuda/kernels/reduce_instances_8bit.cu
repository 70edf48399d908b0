// The reduction kernels of bool, int8, uint8, float8_e4m3 and float8_e5m2: every valid op and source-count variant (see
// reduce_kernels.cuh).
#include <cstdint>

#include "cuda/kernels/reduce_kernels.cuh"

namespace braid::cuda::kernels::detail {

template const void* reduceKernelForType<device::Bool8>(DeviceOp, int);
template const void* reduceKernelForType<std::int8_t>(DeviceOp, int);
template const void* reduceKernelForType<std::uint8_t>(DeviceOp, int);
template const void* reduceKernelForType<__nv_fp8_e4m3>(DeviceOp, int);
template const void* reduceKernelForType<__nv_fp8_e5m2>(DeviceOp, int);

}  // namespace braid::cuda::kernels::detail
