// Binomial tree rooted at any rank: the shape of broadcast, reduce, gather and scatter in ceil(log2 n) rounds.
#pragma once

#include <vector>

namespace braid::patterns {

/// One rank's view of a binomial tree. Ranks are renumbered relative to the root (relative rank
/// (rank - root) mod size, the root being 0); the parent of relative rank v is v with its lowest set bit
/// cleared. The subtree of relative rank v is the consecutive relative ranks [v, v + subtreeSize), so in a
/// gather or scatter a subtree's data is one contiguous range of blocks in root-relative numbering.
class BinomialTree {
 public:
  BinomialTree(int rank, int size, int root);

  int rank() const { return rank_; }
  int size() const { return size_; }
  int root() const { return root_; }

  /// (r - root) mod size: 0 at the root; the index of r's block in root-relative numbering.
  int relativeRank(int r) const;
  int relativeRank() const { return relativeRank(rank_); }
  /// The rank whose relative rank is `relative`.
  int rankOfRelative(int relative) const;

  /// This rank's parent, -1 at the root.
  int parent() const { return parent_; }
  /// This rank's children, largest subtree first: the order in which a broadcast or scatter should send
  /// (and a reduce or gather receive), because the largest subtree is also the deepest, so starting it
  /// first keeps the whole operation within ceil(log2 size) rounds.
  const std::vector<int>& children() const { return children_; }

  /// Ranks in the subtree rooted at `r` (any rank of the group, r itself included); size() at the root.
  int subtreeSize(int r) const;
  int subtreeSize() const { return subtreeSize(rank_); }

  /// Edges between this rank and the root (0 at the root); at most height().
  int depth() const;
  /// The deepest depth of any rank: ceil(log2 size).
  int height() const;

 private:
  int rank_;
  int size_;
  int root_;
  int parent_;
  std::vector<int> children_;
};

}  // namespace braid::patterns
