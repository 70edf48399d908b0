#include "transport/memory/memory_local_group.hpp"

#include <cstdlib>
#include <cstring>

#include "base/error.hpp"

namespace braid::transport {

MemoryArena::MemoryArena(int size, std::size_t regionBytes) : regionBytes_(regionBytes) {
  for (int r = 0; r < size; ++r) {
    void* p = std::aligned_alloc(4096, regionBytes);
    if (!p) fail(ErrorCode::kUnavailable, {}, "cannot allocate ", regionBytes, " bytes for in-memory rank ", r);
    std::memset(p, 0, regionBytes);
    regions_.push_back(static_cast<std::byte*>(p));
  }
}

MemoryArena::~MemoryArena() {
  for (auto* p : regions_) std::free(p);
}

}  // namespace braid::transport
