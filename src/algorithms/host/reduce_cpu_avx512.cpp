// The AVX-512 kernel set (built with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma -mf16c by
// src/CMakeLists.txt); used on CPUs with all of those (Skylake-SP and later, Zen 4).
#if defined(__x86_64__) || defined(__i386__)
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__) || !defined(__AVX512DQ__) || \
    !defined(__F16C__)
#error "reduce_cpu_avx512.cpp must be compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma -mf16c"
#endif

#include "algorithms/host/reduce_kernels_impl.hpp"
#include "algorithms/host/stream_kernels_impl.hpp"
#include "algorithms/host/wire_kernels_impl.hpp"

namespace braid::host::detail {

constinit const ReduceKernels kAvx512Kernels{
    "avx512",           &kReduceTable,       &scaleEntry,          &toBfloat16Entry,
    &fromBfloat16Entry, &sumToBfloat16Entry, &finishBfloat16Entry, &streamCopyEntry};

}  // namespace braid::host::detail
#endif
