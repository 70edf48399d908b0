// The reduction kernels of int32, uint32 and float32: every valid op and source-count variant (see reduce_kernels.cuh).
#include <cstdint>

#include "cuda/kernels/reduce_kernels.cuh"

namespace braid::cuda::kernels::detail {

template const void* reduceKernelForType<std::int32_t>(DeviceOp, int);
template const void* reduceKernelForType<std::uint32_t>(DeviceOp, int);
template const void* reduceKernelForType<float>(DeviceOp, int);

}  // namespace braid::cuda::kernels::detail
