// What lives in the regions of a LocalGroup, and the primitives that use it:
// - collective rounds: a per-rank arrival counter, a descriptor of the call, and two data slots used
//   alternately (round parity), so a rank may write round g+1 while slower peers still read round g;
// - point-to-point byte rings, one per ordered pair (sender's region), with positions that wrap at 2^32;
// - a doorbell per rank that anyone who may have unblocked it rings, so it sleeps on one word.
//
// Region layout (offsets in bytes; every counter on its own cache line):
//   [0, 4096*k)        control: roundLine[2] (counter + descriptor + small payload, per round parity), doorbell,
//                      ringHead[size], ringTail[size] (each beside a single-copy answer), progress
//                      (transport/progress.hpp)
//   slotOffset         slot[0], slot[1]           (slotBytes each)
//   ringOffset         ring[peer] for each peer   (ringBytes each, a power of two)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.hpp"
#include "transport/call_descriptor.hpp"
#include "transport/local_group.hpp"
#include "transport/progress.hpp"
#include "transport/wait.hpp"

namespace braid::transport {

/// The call a rank is in, published with each round so that peers can check they are in the same one.
using RoundDescriptor = CallDescriptor;

/// A RoundDescriptor as it rides on a round line: packed into 24 bytes, so that 32 bytes of payload fit beside it.
/// The hash of a call's per-rank counts rides in the payload: such calls carry no data there.
struct PackedCall {
  std::int64_t seq;
  std::uint64_t count;
  std::int32_t root;
  std::uint8_t collective;
  std::uint8_t dataType;
  std::uint8_t reduceKind;
  std::uint8_t shaped;  // 1: the payload's first 8 bytes hold shapeHash
};
static_assert(sizeof(PackedCall) == 24);
static_assert(std::has_unique_object_representations_v<PackedCall>);  // no padding: compared as bytes

/// What a rank publishes for one round parity, on one cache line: the round counter, the call's descriptor and a
/// small payload, so a peer learns all three with one cache-line transfer (small collectives are latency-bound).
struct alignas(64) RoundLine {
  WaitWord arrived;
  PackedCall call;
  std::byte payload[32];
};
static_assert(sizeof(RoundLine) == 64);
inline constexpr std::size_t kRoundPayloadBytes = sizeof(RoundLine::payload);

struct FabricLayout {
  int size = 0;
  std::size_t slotBytes = 0;
  std::size_t ringBytes = 0;
  std::size_t slotOffset = 0;
  std::size_t ringOffset = 0;
  std::size_t regionBytes = 0;

  /// Rounds slotBytes up to 4 KiB and ringBytes up to a power of two (at least 4 KiB).
  static FabricLayout compute(int size, std::size_t slotBytes, std::size_t ringBytes);
};

class LocalFabric {
 public:
  LocalFabric(std::unique_ptr<LocalGroup> group, const FabricLayout& layout);
  /// Tells the peers this rank takes part in nothing more: their peerFailure(rank) says it destroyed its
  /// communicator (unless it aborted or broke first, which they read instead).
  ~LocalFabric();
  LocalFabric(LocalFabric&&) = delete;
  LocalFabric& operator=(LocalFabric&&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  LocalGroup& group() { return *group_; }
  const LocalGroup& group() const { return *group_; }
  const FabricLayout& layout() const { return layout_; }
  std::size_t slotBytes() const { return layout_.slotBytes; }

  // --- collective rounds ---
  std::byte* slot(int peer, std::uint32_t round) {
    return regions_[peer] + layout_.slotOffset + (round & 1u) * layout_.slotBytes;
  }
  /// The line of `peer` for rounds of `round`'s parity: its counter, descriptor and small payload. The two lines
  /// open each region.
  RoundLine& roundLine(int peer, std::uint32_t round) {
    return reinterpret_cast<RoundLine*>(regions_[peer])[round & 1u];
  }
  /// Writes this rank's descriptor of the call for `round` (before arrive()): a call with per-rank counts
  /// (shapeHash != 0) must not put data in that round's payload.
  void publishDescriptor(std::uint32_t round, const RoundDescriptor& call);
  /// What `peer` published for `round` (once it arrived there).
  RoundDescriptor descriptor(int peer, std::uint32_t round);
  /// Whether `peer` published for `round` the call this rank published there: the packed forms compared as they
  /// lie, without unpacking either (every call checks its first round).
  bool publishedSameCall(int peer, std::uint32_t round);
  /// Publishes that this rank wrote its slot (or payload) and descriptor for `round`.
  void arrive(std::uint32_t round) { post(roundLine(rank_, round).arrived, round); }
  /// arrive() in two halves (postQuietly, wakeSleepers): for a rank that waits for every peer of the round between
  /// them. Every peer waiting for this rank has arrived already, so waking them only once all arrived delays none.
  void arriveQuietly(std::uint32_t round) { postQuietly(roundLine(rank_, round).arrived, round); }
  void wakeArrivalSleepers(std::uint32_t round) { wakeSleepers(roundLine(rank_, round).arrived); }

  // --- point-to-point rings ---
  /// Copies up to `len` bytes into the ring towards `peer`; returns how many fitted.
  std::size_t ringWrite(int peer, const void* data, std::size_t len);
  /// The same after `wholeLen` bytes at `whole` (a header), which go in whole or not at all: returns how many of
  /// `data` followed them (0 also when `whole` did not fit). One publication, one ring of the peer's doorbell.
  std::size_t ringWrite(int peer, const void* whole, std::size_t wholeLen, const void* data, std::size_t len);
  /// Bytes that ringWrite towards `peer` would take now, or fewer where `wanted` or more fit already.
  std::size_t ringFree(int peer, std::size_t wanted = SIZE_MAX);
  /// Copies up to `len` bytes out of the ring from `peer` (drops them when out is null); returns how many. Rings the
  /// peer's doorbell only where it may wait for room: the ring held more than half its bytes.
  std::size_t ringRead(int peer, void* out, std::size_t len);
  /// Bytes waiting in the ring from `peer`.
  std::size_t ringAvailable(int peer);
  /// Reads without consuming (for a message header); returns bytes copied (<= available).
  std::size_t ringPeek(int peer, void* out, std::size_t len);

  /// Where the last message `sender` asked `receiver` to read from its memory stands
  /// (algorithms/host/p2p_single_copy.cpp says what the value means): beside the ring's tail, claimed and answered by
  /// the receiver, withdrawn by the sender.
  std::atomic<std::uint32_t>& singleCopyAnswer(int sender, int receiver);

  /// This rank's doorbell: rung whenever a ring towards this rank moves, when one from it has room again (a read of
  /// a ring more than half full), for single-copy answers, when calls are posted to a running group, on failures.
  WaitWord& doorbell(int peer);
  void ring(int peer);

  // --- liveness ---
  /// Tells every peer this rank aborted: their peerFailure(rank) says so from now on. Any thread, never blocks.
  void markAborted();
  /// Tells every peer this rank's communicator broke in call `seq` (-1: outside a collective) with `code`: their
  /// peerBroke(rank) says so from now on. Any thread, never blocks; an abort said first stays.
  void markBroken(std::int64_t seq, ErrorCode code);
  /// Whether `peer` destroyed its communicator (after finishing its calls, if the program is right). Any thread.
  bool peerLeft(int peer);
  /// Whether `peer` aborted, broke or destroyed its communicator: one load, for checks on a call's path (the reason
  /// is peerFailure's or peerBroke's). Any thread.
  bool peerStopped(int peer);
  /// Why `peer` will take part in no call again though it lives ("" while it may): its communicator broke. Apart
  /// from peerFailure, which says whether the peer lives. Any thread.
  std::string peerBroke(int peer);
  /// The call whose failure broke `peer`: its sequence number (-1: a point-to-point call), or nullopt while it has not
  /// broken. Inline: every round asks it of every peer.
  std::optional<std::int64_t> peerBrokenIn(int peer) {
    if (peer == rank_ || abortFlag(peer).load(std::memory_order_acquire) != kBroken) [[likely]]
      return std::nullopt;
    return brokenSeq(peer);
  }
  /// Advances this rank's heartbeat counter (a background thread calls it every heartbeat interval).
  void beat();
  /// Peers whose counter stands still for longer than this are reported stopped (0: never).
  void setHeartbeatTimeout(double seconds) { heartbeatTimeout_ = seconds; }
  /// Why `peer` can no longer take part ("" while it can): it aborted or destroyed its communicator, its process
  /// exited, or its heartbeat stopped for longer than the heartbeat timeout (the process is stopped, frozen or
  /// swapped out). Any thread.
  std::string peerFailure(int peer);

  // --- progress (flight records) ---
  /// Publishes how far this rank has got: one relaxed store to a line of its own, which peers read only when they
  /// write a flight record. The thread running calls.
  void publishProgress(const Progress& mine) { myProgress_->store(mine.word(), std::memory_order_relaxed); }
  /// Every peer's progress, read from its region now (age 0). Any thread.
  std::vector<PeerProgress> peerProgress();

 private:
  std::atomic<std::int64_t>& progressWord(int peer);
  WaitWord& word(int peer, std::size_t offset);
  WaitWord& ringHead(int sender, int receiver);  // bytes sender wrote for receiver (sender's region)
  WaitWord& ringTail(int sender, int receiver);  // bytes receiver consumed from sender (receiver's region)
  std::byte* ringData(int sender, int receiver);

  std::atomic<std::uint32_t>& heartbeat(int peer);
  std::atomic<std::uint32_t>& abortFlag(int peer) { return *abortFlags_[static_cast<std::size_t>(peer)]; }
  std::int64_t brokenSeq(int peer) const;
  // The abort word's values: a rank that aborted, one whose communicator broke in a call (it makes no more), and one
  // that destroyed its communicator.
  static constexpr std::uint32_t kAborted = 1;
  static constexpr std::uint32_t kBroken = 2;
  static constexpr std::uint32_t kLeft = 3;

  std::unique_ptr<LocalGroup> group_;
  FabricLayout layout_;
  int rank_;
  int size_;
  std::vector<std::byte*> regions_;  // group_->region(peer), asked once: the round path's every step needs one
  std::vector<std::atomic<std::uint32_t>*> abortFlags_;  // each peer's abort word, in its region's control block
  std::atomic<std::int64_t>* myProgress_ = nullptr;      // progressWord(rank_): written twice a call
  std::vector<std::uint32_t> knownTails_;  // per peer, the tail of this rank's ring towards it, as last read
  double heartbeatTimeout_ = 0;
  struct Seen {
    std::uint32_t value = 0;
    std::chrono::steady_clock::time_point at;
  };
  std::mutex seenMu_;       // the thread running calls and the device path's watchdog both ask
  std::vector<Seen> seen_;  // each peer's heartbeat as last observed, and when it last moved
};

}  // namespace braid::transport
