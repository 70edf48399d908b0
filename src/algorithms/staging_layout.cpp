#include "algorithms/staging_layout.hpp"

#include <algorithm>
#include <numeric>

namespace braid {

namespace {

std::uintptr_t begin(const DeviceExtent& e) { return reinterpret_cast<std::uintptr_t>(e.at); }
std::uintptr_t end(const DeviceExtent& e) { return begin(e) + e.bytes; }
bool inside(const DeviceExtent& inner, const DeviceExtent& outer) {
  return begin(outer) <= begin(inner) && end(inner) <= end(outer);
}

}  // namespace

StagingLayout layOutStaging(std::span<const DeviceExtent> extents, std::size_t alignment) {
  StagingLayout layout;
  layout.offsets.assign(extents.size(), StagingLayout::kNone);
  // Largest first, so a container is placed before what it contains; ties keep the callers' order.
  std::vector<std::size_t> order(extents.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return extents[a].bytes > extents[b].bytes; });
  std::vector<std::size_t> placed;  // extents with copies of their own
  for (const std::size_t i : order) {
    const DeviceExtent& e = extents[i];
    if (e.at == nullptr) continue;
    const auto container =
        std::find_if(placed.begin(), placed.end(), [&](std::size_t p) { return inside(e, extents[p]); });
    if (container != placed.end()) {
      layout.offsets[i] = layout.offsets[*container] + (begin(e) - begin(extents[*container]));
      continue;
    }
    layout.offsets[i] = (layout.arenaBytes + alignment - 1) / alignment * alignment;
    layout.arenaBytes = layout.offsets[i] + e.bytes;
    placed.push_back(i);
  }
  for (std::size_t i = 0; i < extents.size(); ++i) {
    const DeviceExtent& e = extents[i];
    if (e.at == nullptr || e.bytes == 0) continue;
    if (e.read) layout.copiesIn.push_back({begin(e), layout.offsets[i], e.bytes});
    if (!e.written) continue;
    // Written once: an extent inside another written one goes back with it, when its copy lies inside that one's
    // copy too (buffers that overlap without one containing the other have copies of their own).
    bool covered = false;
    for (std::size_t j = 0; j < extents.size() && !covered; ++j) {
      const DeviceExtent& other = extents[j];
      if (j == i || other.at == nullptr || !other.written || !inside(e, other)) continue;
      if (layout.offsets[i] - layout.offsets[j] != begin(e) - begin(other)) continue;
      // Of two equal extents, the first goes back.
      covered = other.bytes > e.bytes || begin(other) != begin(e) || j < i;
    }
    if (!covered) layout.copiesOut.push_back({begin(e), layout.offsets[i], e.bytes});
  }
  return layout;
}

}  // namespace braid
