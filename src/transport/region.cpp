#include "transport/region.hpp"

#include <algorithm>

namespace braid::transport {

const Region* RegionTable::add(const void* base, std::size_t bytes, RegionMemory memory, std::uint64_t handle) {
  regions_.push_back(std::make_unique<Region>(Region{static_cast<const std::byte*>(base), bytes, memory, handle}));
  return regions_.back().get();
}

void RegionTable::remove(const Region* region) {
  std::erase_if(regions_, [region](const std::unique_ptr<Region>& r) { return r.get() == region; });
}

const Region* RegionTable::find(const void* p, std::size_t n) const {
  for (auto it = regions_.rbegin(); it != regions_.rend(); ++it) {
    if ((*it)->holds(p, n)) return it->get();
  }
  return nullptr;
}

}  // namespace braid::transport
