// Splitting a buffer of `total` elements into per-rank blocks and fixed-size chunks.
#pragma once

#include <algorithm>
#include <cstddef>

#include "base/error.hpp"

namespace braid::patterns {

/// A contiguous range of elements [offset, offset + count).
struct Block {
  std::size_t offset = 0;
  std::size_t count = 0;

  std::size_t end() const { return offset + count; }
  friend bool operator==(const Block&, const Block&) = default;
};

namespace detail {

inline void checkBlockIndex(int nblocks, int index) {
  if (nblocks < 1) fail(ErrorCode::kInvalidArgument, {}, "nblocks ", nblocks, " invalid: need at least 1 block");
  if (index < 0 || index >= nblocks) {
    fail(ErrorCode::kInvalidArgument, {}, "block index ", index, " out of range for ", nblocks, " blocks");
  }
}

}  // namespace detail

/// Block `index` of `total` elements split into `nblocks` contiguous blocks whose sizes differ by at most one;
/// the first total % nblocks blocks are the larger ones. Blocks past the end of a small buffer are empty
/// (with offset == total), so every rank can run the same schedule whatever the count.
inline Block blockOf(std::size_t total, int nblocks, int index) {
  detail::checkBlockIndex(nblocks, index);
  const auto n = static_cast<std::size_t>(nblocks);
  const auto i = static_cast<std::size_t>(index);
  const std::size_t base = total / n;
  const std::size_t extra = total % n;
  // i * base <= total, so nothing here can overflow.
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

/// Number of chunks of `chunk` elements needed to cover `total` (the last one may be partial); 0 for total 0.
inline std::size_t chunkCount(std::size_t total, std::size_t chunk) {
  if (chunk == 0) fail(ErrorCode::kInvalidArgument, {}, "chunk size 0 invalid for total ", total);
  // Not (total + chunk - 1) / chunk: that wraps for totals near SIZE_MAX.
  return total / chunk + (total % chunk != 0 ? 1 : 0);
}

/// Like blockOf, but every block starts at a multiple of `alignElems` (the last block ends at `total`), so
/// vectorised kernels see aligned starts in every block. Whole units of alignElems are spread as evenly
/// as blockOf spreads elements; blocks may then differ by one unit, and trailing blocks may be empty.
inline Block alignedBlockOf(std::size_t total, int nblocks, int index, std::size_t alignElems) {
  detail::checkBlockIndex(nblocks, index);
  if (alignElems == 0) fail(ErrorCode::kInvalidArgument, {}, "alignment 0 invalid: must be at least 1 element");
  const std::size_t totalUnits = chunkCount(total, alignElems);
  const Block units = blockOf(totalUnits, nblocks, index);
  // The end unit times alignElems may pass total (partial last unit), even SIZE_MAX: clamp it, don't multiply.
  auto toElems = [&](std::size_t u) { return u >= totalUnits ? total : u * alignElems; };
  const std::size_t begin = toElems(units.offset);
  return {begin, toElems(units.end()) - begin};
}

/// For a pass over a range less one block `gap` (elements [begin, end) of the pass): calls f(first, last) for the
/// parts of the range they stand for. Element i of the pass is element i of the range before the gap, i + gap.count
/// from it on.
template <typename F>
void aroundGap(std::size_t begin, std::size_t end, Block gap, F&& f) {
  if (begin < gap.offset) f(begin, std::min(end, gap.offset));
  if (end > gap.offset) f(std::max(begin, gap.offset) + gap.count, end + gap.count);
}

/// For a pass over blocks of `len` elements laid end to end (elements [begin, end) of the pass): calls f(block,
/// first, last) for each block the range crosses, [first, last) being elements of that block. Nothing when len is 0.
template <typename F>
void forEachBlockIn(std::size_t begin, std::size_t end, std::size_t len, F&& f) {
  if (len == 0) return;
  for (std::size_t at = begin; at < end;) {
    const std::size_t block = at / len;
    const std::size_t first = at - block * len;
    const std::size_t last = std::min(len, first + (end - at));
    f(block, first, last);
    at += last - first;
  }
}

}  // namespace braid::patterns
