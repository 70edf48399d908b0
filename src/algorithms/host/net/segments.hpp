// How the net schedules cut their blocks into segments: the unit that is sent, received and reduced, so that the
// work on one segment overlaps the transfer of the next.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>

#include "algorithms/patterns/partition.hpp"
#include "transport/net_transport.hpp"

namespace braid::host {

/// Steps of an allgather phase are numbered from here, after any reduce-scatter phase of the same call.
inline constexpr std::uint32_t kSecondPhase = 0x80000000u;

/// The transport's segment (transport/net_transport.hpp says why this size).
inline constexpr std::size_t kSegmentBytes = transport::kNetSegmentBytes;

/// Segment `index` of `block` in segments of `segElems` elements; empty (at the block's end) past its last one.
inline patterns::Block segmentOf(const patterns::Block& block, std::size_t index, std::size_t segElems) {
  const std::size_t off = index * segElems;
  if (off >= block.count) return {block.end(), 0};
  return {block.offset + off, std::min(segElems, block.count - off)};
}

/// The segmentation every rank derives alike for blocks 0..n-1: elements per segment, segments per block (the
/// largest block's count, at least 1), and that largest block's elements.
struct Segmentation {
  std::size_t elems = 1;
  std::size_t perBlock = 1;
  std::size_t maxBlock = 0;
};

inline Segmentation segmentationOf(const std::function<patterns::Block(int)>& blocks, int n, std::size_t elemBytes) {
  Segmentation s;
  for (int b = 0; b < n; ++b) s.maxBlock = std::max(s.maxBlock, blocks(b).count);
  s.elems = std::max<std::size_t>(1, kSegmentBytes / elemBytes);
  s.perBlock = std::max<std::size_t>(1, patterns::chunkCount(s.maxBlock, s.elems));
  return s;
}

}  // namespace braid::host
