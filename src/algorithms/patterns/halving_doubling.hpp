// Recursive halving (reduce-scatter) then recursive doubling (allgather) for any number of ranks
// (Rabenseifner's allreduce; Thakur, Rabenseifner and Gropp 2005).
#pragma once

namespace braid::patterns {

/// Blocks [first, first + count), in units of HalvingDoubling::powerOfTwo() blocks of the buffer
/// (block i being blockOf(total, powerOfTwo(), i)).
struct BlockRange {
  int first = 0;
  int count = 0;

  int end() const { return first + count; }
  friend bool operator==(const BlockRange&, const BlockRange&) = default;
};

/// One pairwise exchange: send `send` to `peer` while receiving `recv` from it. The peer's step is the same
/// with send and recv swapped. In the halving phase `recv` is also the range this rank keeps: it reduces
/// the peer's partial sums into it and drops the rest. In the doubling phase `recv` is copied in.
struct ExchangeStep {
  int peer = -1;
  BlockRange send;
  BlockRange recv;

  friend bool operator==(const ExchangeStep&, const ExchangeStep&) = default;
};

/// One rank's view of halving-doubling among `size` ranks. With p the largest power of two <= size, the
/// ranks p..size-1 are folded out: each first sends its whole buffer to foldPartner() (rank - p), which
/// reduces it into its own, sits out the main phase, and finally receives the whole result back from that
/// partner. Ranks 0..p-1 (virtual rank == rank) run log2(p) halving steps, after which each holds one block
/// fully reduced (ownedBlock()), then the mirrored log2(p) doubling steps, after which each holds all.
///
/// Halving pairs the nearest ranks first (peer = v xor 1, then xor 2, ...), so the largest exchange, half
/// the buffer, stays between neighbours, which usually share a node when ranks are numbered node by node.
/// The price is that virtual rank v ends the halving owning block bitReverse(v), not block v.
class HalvingDoubling {
 public:
  HalvingDoubling(int rank, int size);

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// p: the largest power of two <= size, the number of ranks (and blocks) in the main phase.
  int powerOfTwo() const { return p_; }
  /// log2(p): the number of halving steps, and of doubling steps, of a rank that is not folded out.
  int steps() const { return steps_; }

  /// Whether this rank sits out the main phase (rank >= p).
  bool foldedOut() const { return rank_ >= p_; }
  /// The rank this one folds into (if foldedOut()) or receives a fold from (if rank < size - p); -1 if none.
  int foldPartner() const;
  /// This rank's number in the power-of-two group, -1 if folded out.
  int virtualRank() const { return foldedOut() ? -1 : rank_; }
  /// The rank playing virtual rank v (0 <= v < p).
  int rankOfVirtual(int v) const;

  /// Halving step k (0 <= k < steps()): peer = v xor 2^k; send one half of the current range, keep and
  /// reduce into the other, the half that contains ownedBlock(). Throws for a folded-out rank.
  ExchangeStep halvingStep(int k) const;
  /// Doubling step k mirrors halving step steps()-1-k: same peer, send what was kept, receive what was sent.
  ExchangeStep doublingStep(int k) const;

  /// The block this rank holds fully reduced after the halving phase. Throws for a folded-out rank.
  int ownedBlock() const;
  /// The virtual rank owning block b after the halving phase (0 <= b < p).
  int ownerOfBlock(int block) const;

 private:
  void checkActive(const char* what) const;

  int rank_;
  int size_;
  int p_;
  int steps_;
};

}  // namespace braid::patterns
