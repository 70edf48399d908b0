// What a network transport offers the algorithms: messages between ranks of other hosts, named and matched, with
// failures that reach every rank. TCP implements it (transport/tcp/tcp_mesh.hpp); another transport (ibverbs) is a
// folder beside tcp/ that implements it too, and the network algorithms (algorithms/host/net) need no change.
//
// Matching. A message is named by (kind, key, step): a collective's (sequence number, message index within the
// call) or a point-to-point message's (tag, message number for that pair and tag). A receive takes exactly the
// message of its name, whenever it arrives, before or after the receive is posted; messages of one pair need not
// arrive in the order they were sent.
//
// Checks and failures. A collective message carries its call's descriptor; one that differs from this rank's call
// fails the call with Mismatch naming both sides. A lost peer fails every pending and later message with it
// (PeerLost); a rank that fails a call tells every peer (notifyFailure), so no peer waits for it until a timeout.
//
// Threads. post, wait, waitAny, cancel, notifyFailure, beginCall and finishCall are for one thread at a time, the one
// that runs calls; wakeWaiter, abort, publishProgress, peerProgress and peerFailure are for any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "transport/call_descriptor.hpp"
#include "transport/progress.hpp"
#include "transport/region.hpp"
#include "transport/wait.hpp"

namespace braid::transport {

/// Whose namespace a message's key is in. The values are TCP's frame kinds for the same (tcp/frame.hpp).
enum class MessageKind : std::uint16_t {
  kCollective = 1,    // key = the call's sequence number, step = the message's index within the call
  kPointToPoint = 2,  // key = the user's tag, step = the message's number for (pair, tag)
};

/// The unit the network algorithms cut large messages into, so that the reduction of one overlaps the transfer of
/// the next: smaller costs a message each, larger delays the overlap. A transport moves a message of this size as one
/// unit (TCP: one frame).
inline constexpr std::size_t kNetSegmentBytes = std::size_t{512} << 10;

/// One message to send or receive, owned by the caller; it and its buffer must stay alive until wait() returned for
/// it (wait cancels what it leaves unfinished when it throws). Not copyable: the transport points at it.
struct NetOp {
  enum class Dir : std::uint8_t { kSend, kRecv };
  enum State : int { kPending = 0, kDone = 1, kFailed = 2 };

  Dir dir = Dir::kSend;
  int peer = -1;
  MessageKind kind = MessageKind::kCollective;
  std::int64_t key = 0;
  std::uint32_t step = 0;
  CallDescriptor call;        // collectives: checked against the sender's
  std::byte* data = nullptr;  // sends only read it
  std::size_t bytes = 0;
  /// The registered region [data, data + bytes) lies in (docs/NETWORK.md), or null: unregistered memory, which a
  /// transport that moves only registered memory copies through its own.
  const Region* region = nullptr;

  std::atomic<int> state{kPending};
  // Written by the transport before state turns kFailed.
  ErrorCode code = ErrorCode::kInternal;
  std::string error;
  int blame = -1;  // the peer the error names when it is not `peer` (a notice naming the rank at fault)
  // The transport's progress on it, under the transport's own lock.
  std::uint64_t done = 0;        // receives: bytes placed
  std::uint32_t framesLeft = 0;  // sends: pieces not yet fully written
  bool posted = false;

  NetOp() = default;
  NetOp(const NetOp&) = delete;
  NetOp& operator=(const NetOp&) = delete;
};

class NetTransport {
 public:
  virtual ~NetTransport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "tcp": the transport's name, as logs and benchmark results record it.
  virtual const char* name() const = 0;

  /// Starts moving `op`. A send completes once the transport holds its bytes (the buffer may then be reused).
  virtual void post(NetOp& op) = 0;
  /// Waits until every op is done. On the first failure, a timeout (naming the peer still awaited) or a throw of
  /// policy.check, cancels the unfinished ops and throws; `context` names the call in the error.
  virtual void wait(std::span<NetOp* const> ops, const CallContext& context, const WaitPolicy& policy) = 0;
  /// The same, but returns as soon as one op is done or `interrupted()` is true (asked while it spins and after each
  /// wake-up): for groups that more operations join while they run. A failure cancels all of `ops`. With no ops it
  /// waits for `interrupted()` alone (until the timeout).
  virtual void waitAny(std::span<NetOp* const> ops, const std::function<bool()>& interrupted,
                       const CallContext& context, const WaitPolicy& policy) = 0;
  /// From any thread, without blocking: a caller asleep in wait/waitAny wakes and looks again.
  virtual void wakeWaiter() = 0;
  /// Cancels the ops that are still pending (their buffers are about to go away); done ones are left alone.
  virtual void cancel(std::span<NetOp* const> ops) = 0;

  /// The call `call` starts on this rank: a collective message of its sequence number that carries another
  /// descriptor fails its receives with Mismatch, so a rank whose peers are in a different call learns it from their
  /// first message, even one it did not wait for.
  virtual void beginCall(const CallDescriptor& call) = 0;
  /// The call `seq` ended on this rank: what still arrives for it, or was kept for it, is dropped.
  virtual void finishCall(std::int64_t seq) = 0;
  /// Tells every peer that this rank failed call `seq` (best effort; never blocks). `suspect` is the peer at fault
  /// as this rank sees it (-1: none), named in the peers' errors.
  virtual void notifyFailure(std::int64_t seq, ErrorCode code, const std::string& text, int suspect = -1) = 0;
  /// From any thread, without blocking: tells every peer this rank is gone (they lose it at once), fails this rank's
  /// pending ops with Aborted, and refuses new ones.
  virtual void abort() = 0;
  /// Peer `peer`'s failure, or "" while it is connected.
  virtual std::string peerFailure(int peer) = 0;
  /// Whether `peer` is gone because it destroyed its communicator (having failed nothing): a peer that leaves after
  /// its last call fails only what waits for that very peer.
  virtual bool peerLeft(int peer) = 0;
  /// This rank's progress, which the transport carries to its peers; any thread.
  virtual void publishProgress(const Progress& mine) = 0;
  /// Every peer's progress as it last told it; any thread.
  virtual std::vector<PeerProgress> peerProgress() const = 0;
  /// Point-to-point payload bytes written and read so far, a count that only grows; any thread. A group of
  /// point-to-point calls that sees it move knows its peers are there (core/p2p_group.cpp).
  virtual std::uint64_t pointToPointBytesMoved() const = 0;
  /// Whether a message of (kind, key, step) from `peer` has begun arriving with no receive posted for it yet (it is
  /// kept aside): how a receive from any source learns which peer to take its message from. The calls' thread.
  virtual bool arrived(int peer, MessageKind kind, std::int64_t key, std::uint32_t step) = 0;
  /// While on, every peer is read whatever is kept aside for it (a transport may stop reading a peer of which much
  /// is kept, until a receive from it is posted): a receive from any source waits for a message that may be behind
  /// them. The calls' thread.
  virtual void readEveryPeer(bool on) = 0;

  /// Registered memory (docs/NETWORK.md), for the thread that runs calls: a range its owner reuses, registered once.
  virtual const Region* registerRegion(const void* base, std::size_t bytes, RegionMemory memory) = 0;
  virtual void deregisterRegion(const Region* region) = 0;
  /// The region holding [p, p + bytes) whole, or null.
  virtual const Region* regionOf(const void* p, std::size_t bytes) const = 0;

  /// What joins this rank to its peers, in the words a benchmark's results record ("TCP over eth0 (2 streams per
  /// peer)").
  virtual std::string linkDescription() = 0;
};

}  // namespace braid::transport
