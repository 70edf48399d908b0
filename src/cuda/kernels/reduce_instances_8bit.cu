// The reduction kernels of bool, int8 and uint8: every valid op and source-count variant (see reduce_kernels.cuh).
#include <cstdint>

#include "cuda/kernels/reduce_kernels.cuh"

namespace braid::cuda::kernels::detail {

template const void* reduceKernelForType<device::Bool8>(DeviceOp, int);
template const void* reduceKernelForType<std::int8_t>(DeviceOp, int);
template const void* reduceKernelForType<std::uint8_t>(DeviceOp, int);

}  // namespace braid::cuda::kernels::detail
