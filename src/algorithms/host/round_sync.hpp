// Lock-step rounds among the ranks of a LocalFabric: each round every rank writes its slot, publishes it, and
// waits until every peer published; then it may read any peer's slot of that round. Slots alternate by round
// parity, so the next round's writes never touch what slower peers still read (a peer can only publish round
// g+2, reusing our parity, after it saw us publish g+1, i.e. after we finished reading g).
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/collective.hpp"
#include "algorithms/op_env.hpp"
#include "transport/local_fabric.hpp"

namespace braid::host {

/// Describes a call for the cross-rank check of its first round. Inline: built in place, field by field, where an
/// out-of-line copy would be read back whole right after its narrower stores (a stall on every small call).
inline transport::RoundDescriptor describeCall(Collective collective, std::int64_t seq, DataType type,
                                               std::uint64_t count, int root = -1, ReduceKind kind = ReduceKind::kSum,
                                               std::uint64_t shapeHash = 0) {
  return {.seq = seq,
          .collective = static_cast<std::uint32_t>(collective),
          .dataType = static_cast<std::uint32_t>(type),
          .count = count,
          .root = root,
          .reduceKind = static_cast<std::uint32_t>(kind),
          .shapeHash = shapeHash};
}

/// "allreduce #3 (float32, count 100, sum)": a call in words, for Mismatch messages.
std::string describeInWords(const transport::RoundDescriptor& call);

class RoundSync {
 public:
  // Inline, so the call's descriptor is built in place (see describeCall).
  RoundSync(transport::LocalFabric& fabric, std::uint32_t& round, const transport::RoundDescriptor& call,
            const OpEnv& env)
      : fabric_(fabric), round_(round), call_(call), env_(env) {
    policy_.spinMicros = env.spinMicros;
    policy_.yieldWhileSpinning = env.yieldWhileSpinning;
    policy_.timeoutSeconds = env.timeoutSeconds;
    policy_.deadline = &env.deadline;
    policy_.sliceMicros = env.sliceMicros;
    policy_.check = FunctionRef<void()>::to<&RoundSync::checkWait>(this);
    policy_.onTimeout = FunctionRef<void()>::to<&RoundSync::failTimedOut>(this);
  }

  int rank() const { return fabric_.rank(); }
  int size() const { return fabric_.size(); }
  std::size_t slotBytes() const { return fabric_.slotBytes(); }

  /// This rank's slot for the next round: write it, then exchange().
  std::byte* nextSlot() const { return fabric_.slot(fabric_.rank(), round_ + 1); }
  /// Publishes this rank's next slot and waits for every peer's. The call's first exchange also checks that
  /// every peer is in the same call (Mismatch naming both sides otherwise).
  void exchange();
  /// What this rank reads right after the next exchange: `bytes` from `offset` of each peer's slot, or of `peer`'s
  /// only. Up to kFetchedBytes, the waits fetch those lines while they poll the peer's counter, so the data arrives
  /// with the counter rather than one cache-line transfer after it. Larger reads are bandwidth-bound and are left to
  /// the hardware's prefetchers.
  void expectRead(std::size_t offset, std::size_t bytes, int peer = -1) {
    expectOffset_ = offset;
    expectBytes_ = bytes <= kFetchedBytes ? bytes : 0;
    expectPeer_ = peer;
  }
  /// 256 bytes: four lines, five where a read starts mid-line. Eight lines at every poll made a 512-byte allreduce
  /// of 2 ranks slower on the 2-core VM (runs not committed); the likely cause is the polls taking the lines the
  /// writer is storing to.
  static constexpr std::size_t kFetchedBytes = 256;
  /// The round last exchanged (its slots are slot()'s).
  std::uint32_t round() const { return round_; }
  /// After exchange() threw, for a rank whose buffer its peers may still be copying (SingleCopy): where every peer
  /// reached round `from` (their copies begin once all did), each is waited for until it reached the round after,
  /// failed, or `seconds` passed; never throws. Peers arrive there as soon as their copies are done.
  void lingerForPeers(std::uint32_t from, double seconds) const noexcept;
  /// After exchange() threw with `code` (any but a Mismatch, which fails every rank alike in the round that finds it):
  /// tells the peers at once that this rank's communicator broke in this call, as the communicator does on the way
  /// out, then a full fence. With confirmPeersWhole's fence, a peer that completes the round after this rank looked
  /// for it (lingerForPeers) finds it broken. Never throws.
  void announceBroken(ErrorCode code) noexcept;
  /// Before reading a peer's memory that the round last exchanged exposed: fails the call (PeerLost) where a peer
  /// aborted or broke, which no reader of its slots needs to know. A full fence first (see announceBroken).
  void confirmPeersWhole();
  /// A peer's slot of the round last exchanged.
  const std::byte* slot(int peer) const { return fabric_.slot(peer, round_); }
  /// A peer's slot of `round` (of its parity: what it wrote there last).
  const std::byte* slotOf(int peer, std::uint32_t round) const { return fabric_.slot(peer, round); }
  /// For rounds that carry at most transport::kRoundPayloadBytes: the payload travels on the round's own cache line
  /// instead of the slot, so a peer fetches counter, descriptor and data at once.
  std::byte* nextPayload() const { return fabric_.roundLine(fabric_.rank(), round_ + 1).payload; }
  const std::byte* payload(int peer) const { return fabric_.roundLine(peer, round_).payload; }

 private:
  void waitFor(int peer);
  void checkDescriptors();
  void checkPeersWhole();  // after each exchange: no peer broke its communicator
  void checkWait();        // between a wait's sleeps: the call aborted, the awaited peer lost
  void failTimedOut();     // throws Timeout naming the awaited peer
  /// Why `peer` takes part in nothing more ("" while it may), and in `named` the peer to name for it: `peer` itself,
  /// or where it broke its communicator on an error from elsewhere, a peer that failed outright (aborted, exited or
  /// went silent without breaking first), as a rank that saw that one first names it.
  std::string whyStopped(int peer, int& named);

  transport::LocalFabric& fabric_;
  std::uint32_t& round_;
  transport::RoundDescriptor call_;
  const OpEnv& env_;
  transport::WaitPolicy policy_;
  int waitingFor_ = -1;
  std::size_t expectOffset_ = 0;
  std::size_t expectBytes_ = 0;  // 0: nothing to fetch while waiting
  int expectPeer_ = -1;
  bool checked_ = false;
};

}  // namespace braid::host
