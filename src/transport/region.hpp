// Registered memory (docs/NETWORK.md): a range that an owner who reuses it (the engines' scratch and staging
// buffers) registered once with the network transport, so that a transport which moves only registered memory
// (RDMA verbs: ibv_reg_mr, ibv_reg_dmabuf_mr for GPU memory) finds its handle per message instead of registering per
// message (tens of microseconds each). Every message names the region its buffer lies in, or none; a transport that
// needs no registration (TCP) records regions and never looks at them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace braid::transport {

enum class RegionMemory : std::uint8_t { kHost, kPinnedHost, kDevice };

struct Region {
  const std::byte* base = nullptr;
  std::size_t bytes = 0;
  RegionMemory memory = RegionMemory::kHost;
  std::uint64_t handle = 0;  // the transport's (verbs: the memory region's keys); TCP: 0

  /// Whether [p, p + n) lies inside the region, whole.
  bool holds(const void* p, std::size_t n) const {
    const auto* b = static_cast<const std::byte*>(p);
    return b >= base && n <= bytes && static_cast<std::size_t>(b - base) <= bytes - n;
  }
};

/// The regions of one transport. Registered, deregistered and looked up by the thread that runs the calls.
/// Few regions (an engine's own buffers), so a lookup is a scan from the newest.
class RegionTable {
 public:
  /// Records a region; the pointer stays valid until remove(). Regions may overlap.
  const Region* add(const void* base, std::size_t bytes, RegionMemory memory, std::uint64_t handle = 0);
  /// Forgets `region` (from add; null does nothing).
  void remove(const Region* region);
  /// The newest region that holds [p, p + n) whole, or null.
  const Region* find(const void* p, std::size_t n) const;
  std::size_t size() const { return regions_.size(); }

 private:
  std::vector<std::unique_ptr<Region>> regions_;
};

}  // namespace braid::transport
