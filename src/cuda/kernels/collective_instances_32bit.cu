// The reducing collective kernels of the 32-bit element types (see collective_kernels.cuh).
#include <cstdint>

#include "cuda/kernels/collective_kernels.cuh"

namespace braid::cuda::kernels::detail {

template const void* reducingKernelForType<std::int32_t>(DeviceOp, bool);
template const void* reducingKernelForType<std::uint32_t>(DeviceOp, bool);
template const void* reducingKernelForType<float>(DeviceOp, bool);

}  // namespace braid::cuda::kernels::detail
