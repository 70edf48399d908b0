// The AVX2 kernel set (built with -mavx2 -mfma -mf16c by src/CMakeLists.txt); used on CPUs with AVX2, FMA and
// F16C. FMA is required by the dispatcher only as part of the usual AVX2 baseline: -ffp-contract=off keeps the
// compiler from fusing multiply-adds, so results match the generic set bit for bit.
#if defined(__x86_64__) || defined(__i386__)
#if !defined(__AVX2__) || !defined(__F16C__)
#error "reduce_cpu_avx2.cpp must be compiled with -mavx2 -mfma -mf16c"
#endif

#include "algorithms/host/reduce_kernels_impl.hpp"
#include "algorithms/host/stream_kernels_impl.hpp"
#include "algorithms/host/wire_kernels_impl.hpp"

namespace braid::host::detail {

constinit const ReduceKernels kAvx2Kernels{"avx2",
                                           &kReduceTable,
                                           &scaleEntry,
                                           &toBfloat16Entry,
                                           &fromBfloat16Entry,
                                           &sumToBfloat16Entry,
                                           &finishBfloat16Entry,
                                           &streamCopyEntry};

}  // namespace braid::host::detail
#endif
