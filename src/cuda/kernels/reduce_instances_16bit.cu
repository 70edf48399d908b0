// The reduction kernels of float16 and bfloat16: every valid op and source-count variant (see reduce_kernels.cuh).
#include <cstdint>

#include "cuda/kernels/reduce_kernels.cuh"

namespace braid::cuda::kernels::detail {

template const void* reduceKernelForType<__half>(DeviceOp, int);
template const void* reduceKernelForType<__nv_bfloat16>(DeviceOp, int);

}  // namespace braid::cuda::kernels::detail
