// The reducing collective kernels of the 64-bit element types (see collective_kernels.cuh).
#include <cstdint>

#include "cuda/kernels/collective_kernels.cuh"

namespace braid::cuda::kernels::detail {

template const void* reducingKernelForType<std::int64_t>(DeviceOp, bool);
template const void* reducingKernelForType<std::uint64_t>(DeviceOp, bool);
template const void* reducingKernelForType<double>(DeviceOp, bool);

}  // namespace braid::cuda::kernels::detail
