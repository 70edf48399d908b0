// The reducing collective kernels of the 8-bit element types (see collective_kernels.cuh).
#include <cstdint>

#include "cuda/kernels/collective_kernels.cuh"

namespace braid::cuda::kernels::detail {

template const void* reducingKernelForType<device::Bool8>(DeviceOp, bool);
template const void* reducingKernelForType<std::int8_t>(DeviceOp, bool);
template const void* reducingKernelForType<std::uint8_t>(DeviceOp, bool);
template const void* reducingKernelForType<__nv_fp8_e4m3>(DeviceOp, bool);
template const void* reducingKernelForType<__nv_fp8_e5m2>(DeviceOp, bool);

}  // namespace braid::cuda::kernels::detail
