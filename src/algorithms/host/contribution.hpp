// A rank's input as it enters a reduction: premul-sum scales it on the copy that the algorithm makes anyway, so
// the scale costs no extra pass. Shared by the local (shm) and net (TCP) reductions.
#pragma once

#include "algorithms/host/copy.hpp"
#include "algorithms/host/reduce_cpu.hpp"

namespace braid::host {

/// Whether contribute() changes the values (a premul sum's scale), so that an algorithm cannot read the input in place.
inline bool scales(ReduceOp op) { return op.kind == ReduceKind::kPremulSum && op.scale != 1.0; }

inline void contribute(void* dst, const void* src, std::size_t count, DataType type, ReduceOp op) {
  if (scales(op)) {
    scaleCopy(dst, src, count, type, op.scale);
  } else if (dst != src) {
    copyBytes(dst, src, count * dataTypeSize(type));
  }
}

}  // namespace braid::host
