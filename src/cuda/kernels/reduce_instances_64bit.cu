// The reduction kernels of int64, uint64 and float64: every valid op and source-count variant (see reduce_kernels.cuh).
#include <cstdint>

#include "cuda/kernels/reduce_kernels.cuh"

namespace braid::cuda::kernels::detail {

template const void* reduceKernelForType<std::int64_t>(DeviceOp, int);
template const void* reduceKernelForType<std::uint64_t>(DeviceOp, int);
template const void* reduceKernelForType<double>(DeviceOp, int);

}  // namespace braid::cuda::kernels::detail
