// Tagged point-to-point messages over a LocalFabric's byte rings. Each ordered pair of ranks has one ring, so
// messages between a pair arrive in the order they were sent; a receive takes the first message from its peer
// with its tag, and messages that arrive before their receive is posted wait in a per-peer queue (MPI's
// "unexpected" messages). A receive from kAnySource takes the earliest such message from any peer that waits, else
// the first whose header it reads; receives match arriving messages in the order they were posted. A group's operations
// all progress together, so any mix of sends and receives completes without deadlock as long as every rank posts the
// matching ones; calls posted while a group runs join it (p2p_feed.hpp).
//
// Single copy: a message larger than the ring waits for its receiver anyway, so it does not cross the ring. Its
// header names where it lies in the sender's memory, and the receiver copies it from there in one step
// (transport/process_memory.hpp) before it answers; the send completes with the answer. Where the kernel refuses
// the read, the answer says so, and the sender streams that message and its later ones to that peer through the
// ring as it does smaller ones (that message again, under a header of its own). A send that fails before its
// receiver claimed the message withdraws it, and the receive that takes it fails with PeerLost; one that fails while
// the receiver reads waits for the read (a thread rank's memcpy whole, another process's read up to a bound, then
// withdrawn under it): a run that returned leaves no thread reading its buffers.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "algorithms/op_env.hpp"
#include "transport/local_fabric.hpp"

namespace braid::host {

class P2pEngine {
 public:
  /// `singleCopy`: whether this rank asks its peers to read its large messages from its memory and reads theirs
  /// (false: it refuses, and every message crosses the ring).
  explicit P2pEngine(transport::LocalFabric& fabric, bool singleCopy = true);

  /// Runs all `ops` to completion (or throws: Timeout, PeerLost), and with env.feed what joins them meanwhile, each
  /// reported as it completes. A receive of a message of another size completes (nothing written) and fails with
  /// Mismatch naming peer, tag and sizes: reported so to the feed, or thrown once every operation is done.
  void run(std::span<const P2pOp> ops, const OpEnv& env);
  /// Any thread: wakes a run() asleep, so that it asks its feed (rings this rank's doorbell).
  void wake();

 private:
  struct Header {
    std::uint32_t magic;
    std::int32_t tag;
    std::uint64_t bytes;
    // A single-copy message's place in the sender's memory, and whose memory; address 0: the payload follows.
    std::uint64_t address;
    std::uint64_t pidNamespace;
    std::int32_t pid;
    std::uint32_t reserved;
  };
  struct Unexpected {
    int tag;
    std::vector<std::byte> data;
    std::uint64_t arrival;   // order of arrival over all peers: a receive from any source takes the earliest
    bool withdrawn = false;  // its sender's send failed before it was read: the receive that takes it fails
  };
  // A message being read out of a peer's ring.
  struct Incoming {
    bool active = false;
    int tag = 0;
    std::uint64_t bytes = 0;
    std::uint64_t done = 0;
    std::byte* target = nullptr;  // a posted receive's buffer, or the unexpected entry's
    int op = -1;                  // index of the receive it completes, -1 when unexpected
    bool sizeMismatch = false;
    bool discard = false;  // its receive belonged to a group that failed: the rest of it is read and dropped
  };
  struct Pending {
    std::uint64_t bytes = 0;
    std::uint64_t done = 0;
    bool headerSent = false;
    bool complete = false;
    bool matched = false;          // receives: bound to an incoming message
    bool awaitingAnswer = false;   // sends: single copy asked, not yet answered
    std::uint32_t ticket = 0;      // and which of this rank's single-copy messages to that peer it is
    std::optional<Error> failure;  // receives: the message was of another size (complete, its call fails)
  };

  bool progressSends(std::span<const P2pOp> ops, std::vector<Pending>& state, const OpEnv& env);
  bool progressReceives(std::span<const P2pOp> ops, std::vector<Pending>& state, const OpEnv& env);
  bool takeUnexpected(const P2pOp& op, Pending& state, const OpEnv& env);
  /// A receive took a message of another size: it is complete, and fails with Mismatch once the group's other
  /// operations are done (its message is through, so the pair's stream stays whole).
  static void failOnSize(Pending& s, int peer, int tag, std::uint64_t sent, const OpEnv& env);
  /// Whether a send of `bytes` to `peer` asks the peer to read it from this rank's memory.
  bool singleCopyTo(int peer, std::uint64_t bytes) const;
  void runGroup(std::span<const P2pOp> ops, const OpEnv& env);  // run's body
  // A sender's view of its single-copy message: unanswered (or being read), read, or refused.
  enum class Answer { kNone, kRead, kRefused };
  /// Fills `h` so that the receiver reads `op`'s buffer in place, and gives `s` its ticket.
  void askSingleCopy(const P2pOp& op, Header& h, Pending& s);
  Answer answerTo(int peer, const Pending& s);
  enum class Copied { kRead, kRefused, kWithdrawn };
  /// A single-copy message's header arrived from `peer`, its target chosen: claims it and reads it whole, and answers
  /// the sender. kRefused: the kernel refused the read, and the sender sends the message again through the ring;
  /// kWithdrawn: the sender's send failed before this rank claimed it or while it read (nothing to trust). Neither
  /// leaves a payload behind the header.
  Copied readSingleCopy(int peer, const Header& h, Incoming& in);
  /// The receive that took a message its sender withdrew fails: PeerLost.
  [[noreturn]] void failWithdrawn(int peer, int tag, const OpEnv& env);
  /// A run that fails: withdraws its single-copy sends no receiver claimed yet, and waits for those one is reading
  /// (another process's read up to a bound), so that no thread reads them once the run returned.
  void withdrawUnanswered() noexcept;
  /// Reads what arrived from `peer` while a pending receive may take it; true when bytes moved.
  bool readFrom(int peer, std::span<const P2pOp> ops, std::vector<Pending>& state, const OpEnv& env);
  /// The peer whose message the receive `op` is bound to and reading, or -1.
  int boundPeer(std::size_t op) const;
  /// Whether a pending receive not yet bound to a message would take one from `peer`.
  static bool wantsFrom(int peer, std::span<const P2pOp> ops, const std::vector<Pending>& state);
  // Drops the first `n` operations (all complete) from a fed group's lists.
  void forget(std::size_t n, std::vector<P2pOp>& ops, std::vector<Pending>& state, std::vector<bool>& told);

  transport::LocalFabric& fabric_;
  std::vector<std::deque<Unexpected>> unexpected_;  // per peer, in arrival order
  std::vector<Incoming> incoming_;                  // per peer
  std::uint64_t arrivals_ = 0;                      // Unexpected::arrival of the next
  std::vector<bool> wanted_;                        // progressReceives: the peers it reads, kept to spare allocations
  std::vector<bool> busy_;                          // progressSends: the peers a send is under way to, likewise
  std::vector<P2pOp> ops_;                          // run: the group's operations (those given, then those that joined)
  std::vector<Pending> state_;                      // and how each stands
  std::vector<bool> told_;                          // and whether the feed heard it completed
  int firstPeer_ = 0;  // where a receive from any source starts looking, turning so that no peer starves the others
  bool singleCopy_;
  std::vector<std::uint32_t> asked_;     // per peer: single-copy messages this rank sent it (tickets)
  std::vector<std::uint32_t> answered_;  // per peer: its single-copy messages this rank answered
  std::vector<bool> refusedBy_;          // per peer: it could not read this rank's memory (or will not)
};

}  // namespace braid::host
