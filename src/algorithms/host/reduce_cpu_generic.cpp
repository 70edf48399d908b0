// The baseline kernel set: plain x86-64 (SSE2) or whatever the build targets; the fallback on every CPU.
#include "algorithms/host/reduce_kernels_impl.hpp"
#include "algorithms/host/stream_kernels_impl.hpp"
#include "algorithms/host/wire_kernels_impl.hpp"

namespace braid::host::detail {

constinit const ReduceKernels kGenericKernels{
    "generic",          &kReduceTable,       &scaleEntry,          &toBfloat16Entry,
    &fromBfloat16Entry, &sumToBfloat16Entry, &finishBfloat16Entry, &streamCopyEntry};

}  // namespace braid::host::detail
