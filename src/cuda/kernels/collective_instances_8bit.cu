// The reducing collective kernels of the 8-bit element types (see collective_kernels.cuh).
#include <cstdint>

#include "cuda/kernels/collective_kernels.cuh"

namespace braid::cuda::kernels::detail {

template const void* reducingKernelForType<device::Bool8>(DeviceOp, bool);
template const void* reducingKernelForType<std::int8_t>(DeviceOp, bool);
template const void* reducingKernelForType<std::uint8_t>(DeviceOp, bool);

}  // namespace braid::cuda::kernels::detail
