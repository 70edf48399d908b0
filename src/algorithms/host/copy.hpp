// memcpy that accepts null pointers when there is nothing to copy (zero-count calls may pass nullptr).
#pragma once

#include <cstring>

namespace braid::host {

inline void copyBytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
}

}  // namespace braid::host
