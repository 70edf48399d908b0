// The reducing collective kernels of the 16-bit element types (see collective_kernels.cuh).
#include <cstdint>

#include "cuda/kernels/collective_kernels.cuh"

namespace braid::cuda::kernels::detail {

template const void* reducingKernelForType<__half>(DeviceOp, bool);
template const void* reducingKernelForType<__nv_bfloat16>(DeviceOp, bool);

}  // namespace braid::cuda::kernels::detail
