// Ring schedules: reduce-scatter and allgather around a ring of ranks, in n-1 steps each.
#pragma once

#include <vector>

namespace braid::patterns {

/// One rank's view of a ring. Blocks are numbered by the rank that owns them after the reduce-scatter:
/// block b is the part of the buffer rank b ends up holding fully reduced (blockOf(total, size, b) for an
/// allreduce), whatever the ring order. A custom order (e.g. ranks sorted so that neighbours share a
/// NUMA node or an NVLink) changes who talks to whom, never which block a rank owns.
///
/// At every step each rank sends exactly one block to next() and receives exactly one from prev();
/// what a rank sends at step s is what its next() receives at step s.
class Ring {
 public:
  /// The ring 0 -> 1 -> ... -> size-1 -> 0.
  Ring(int rank, int size);
  /// A ring visiting `order` (a permutation of 0..order.size()-1) in turn, then back to order[0].
  static Ring withOrder(int rank, std::vector<int> order);

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(order_.size()); }
  /// This rank's place in the ring order: order[position()] == rank().
  int position() const { return position_; }
  /// The rank at `position` (taken modulo size, so position() + 1 and position() - 1 are fine).
  int rankAt(int position) const;
  const std::vector<int>& order() const { return order_; }
  int next() const { return rankAt(position_ + 1); }
  int prev() const { return rankAt(position_ - 1); }

  /// Steps of each phase: size() - 1 (none for a single rank).
  int steps() const { return size() - 1; }

  /// Reduce-scatter step s (0 <= s < steps()): the block this rank sends to next() (its partial sum, after
  /// reducing what it received at step s-1 into it) and the block it receives from prev() and reduces into.
  int reduceScatterSendBlock(int step) const;
  int reduceScatterRecvBlock(int step) const;
  /// The block this rank holds fully reduced after the reduce-scatter steps: its own rank.
  int ownedBlockAfterReduceScatter() const { return rank_; }

  /// Allgather step s: the block this rank forwards to next() (its own at step 0) and the block it
  /// receives from prev(). Starts from each rank holding its owned block, so it follows the reduce-scatter
  /// directly for an allreduce.
  int allgatherSendBlock(int step) const;
  int allgatherRecvBlock(int step) const;

 private:
  Ring(int rank, std::vector<int> order, int position);

  int rank_;
  std::vector<int> order_;
  int position_;
};

}  // namespace braid::patterns
