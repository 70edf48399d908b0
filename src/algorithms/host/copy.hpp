// memcpy that accepts null pointers when there is nothing to copy (zero-count calls may pass nullptr), and its
// form for a call's output, which large calls stream (reduce_cpu.hpp's streamBytes).
#pragma once

#include <cstring>

#include "algorithms/host/reduce_cpu.hpp"

namespace braid::host {

inline void copyBytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
}

/// copyBytes into a call's output; `stream`: with non-temporal stores (LocalCollectives::streams).
inline void copyOut(void* dst, const void* src, std::size_t bytes, bool stream) {
  if (stream) {
    streamBytes(dst, src, bytes);
  } else {
    copyBytes(dst, src, bytes);
  }
}

}  // namespace braid::host
