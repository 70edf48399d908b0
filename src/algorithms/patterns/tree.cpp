#include "algorithms/patterns/tree.hpp"

#include <algorithm>
#include <bit>

#include "algorithms/patterns/common.hpp"

namespace braid::patterns {

namespace {

// The lowest set bit of v, the span of v's subtree before clipping at size; the root (0) spans everything.
// Computed in unsigned arithmetic so 2^30 <= size < 2^31 cannot overflow.
unsigned span(int v, int size) {
  return v == 0 ? static_cast<unsigned>(size) : static_cast<unsigned>(v) & (0u - static_cast<unsigned>(v));
}

}  // namespace

BinomialTree::BinomialTree(int rank, int size, int root) : rank_(rank), size_(size), root_(root), parent_(-1) {
  checkRank(rank, size);
  checkRoot(root, size);
  const int v = relativeRank();
  if (v != 0) parent_ = rankOfRelative(v & (v - 1));
  // Children are v + 2^k for every 2^k below v's lowest set bit that stays inside the group; their
  // subtree sizes are min(2^k, size - child).
  const unsigned limit = span(v, size);
  for (unsigned bit = 1; bit < limit; bit <<= 1) {
    const unsigned child = static_cast<unsigned>(v) + bit;
    if (child >= static_cast<unsigned>(size)) break;
    children_.push_back(rankOfRelative(static_cast<int>(child)));
  }
  // Largest subtree first; equal sizes farthest first, as MPICH's binomial broadcast does.
  std::stable_sort(children_.begin(), children_.end(), [this](int a, int b) {
    const int sa = subtreeSize(a), sb = subtreeSize(b);
    return sa != sb ? sa > sb : relativeRank(a) > relativeRank(b);
  });
}

int BinomialTree::relativeRank(int r) const {
  checkRank(r, size_);
  return r >= root_ ? r - root_ : r - root_ + size_;
}

int BinomialTree::rankOfRelative(int relative) const {
  if (relative < 0 || relative >= size_) {
    fail(ErrorCode::kInvalidArgument, {}, "relative rank ", relative, " out of range for ", size_, " ranks");
  }
  // Compare before adding: relative + root may pass INT_MAX for groups of more than 2^30 ranks.
  return relative < size_ - root_ ? relative + root_ : relative - (size_ - root_);
}

int BinomialTree::subtreeSize(int r) const {
  const int v = relativeRank(r);
  const unsigned remaining = static_cast<unsigned>(size_ - v);
  return static_cast<int>(std::min(span(v, size_), remaining));
}

int BinomialTree::depth() const { return std::popcount(static_cast<unsigned>(relativeRank())); }

int BinomialTree::height() const { return ceilLog2(size_); }

}  // namespace braid::patterns
