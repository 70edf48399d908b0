// Matching the messages of one peer to the receives posted for them, whatever carries the bytes: the part of a
// network transport that knows no socket (TCP's frames, an RDMA transport's eager slots, both arrive as pieces).
//
// A piece names its message (kind, key, step), says what its sender's header said of the whole message (the call's
// descriptor, its size) and where in it the piece goes. A piece of a message whose receive is posted lands in the
// receive's buffer; else it is kept aside ("stashed") until the receive is posted, which then takes everything that
// arrived whole and the rest as it lands. A receive whose message differs from what the sender sent (another call, or
// another size) fails with Mismatch naming both sides.
//
// Not thread-safe: the transport calls it under its own lock. Ops complete and fail through MatchOutcomes, where the
// transport does its own bookkeeping (waking a waiter, dropping its references to the op).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "transport/call_descriptor.hpp"
#include "transport/net_transport.hpp"

namespace braid::transport {

struct MessageName {
  MessageKind kind = MessageKind::kCollective;
  std::int64_t key = 0;
  std::uint32_t step = 0;
  static MessageName of(const NetOp& op) { return {op.kind, op.key, op.step}; }
  auto operator<=>(const MessageName&) const = default;
};

/// One piece of a message as it arrives.
struct Piece {
  MessageName name;
  CallDescriptor call;             // the sender's call (collectives)
  std::uint64_t messageBytes = 0;  // the whole message's size, as the sender posted it
  std::uint64_t offset = 0;        // where the piece goes within the message
  std::uint32_t length = 0;
};

class MatchOutcomes {
 public:
  virtual void complete(NetOp& op) = 0;
  virtual void failOp(NetOp& op, ErrorCode code, std::string text) = 0;

 protected:
  ~MatchOutcomes() = default;
};

class PeerMatcher {
  struct Chunk {
    std::uint64_t offset = 0;
    std::vector<std::byte> data;
    bool complete = false;
  };
  struct Stash {
    MessageName name;
    CallDescriptor call;
    std::uint64_t messageBytes = 0;
    std::deque<Chunk> chunks;  // a deque: a chunk being filled keeps its address while others are added
    int inFlight = 0;          // chunks still arriving
    NetOp* op = nullptr;       // a receive posted while chunks were in flight: they go to it when they land
    bool dead = false;         // its receive failed, was cancelled or took everything: in-flight chunks are dropped
  };

 public:
  /// Where a piece's bytes go while it arrives. `target` null: nowhere (they are dropped).
  struct Landing {
    NetOp* op = nullptr;
    Stash* stash = nullptr;
    Chunk* chunk = nullptr;
    std::byte* target = nullptr;
  };

  /// `describe` turns a call descriptor into words for Mismatch messages; it may be empty.
  PeerMatcher(int peer, const std::function<std::string(const CallDescriptor&)>* describe)
      : peer_(peer), describe_(describe) {}
  PeerMatcher(const PeerMatcher&) = delete;
  PeerMatcher& operator=(const PeerMatcher&) = delete;

  /// Posts the receive `op`: it takes what is kept aside for it, and completes when its message is whole. Fails it
  /// (kInternal) when a receive of the same name is posted already.
  void post(NetOp& op, MatchOutcomes& out);
  /// `op` leaves the matcher (it completed or failed): its name is free again, and no piece goes to it any more.
  void forget(NetOp& op);
  /// A piece's header arrived: where its `piece.length` bytes go.
  Landing arrive(const Piece& piece, MatchOutcomes& out);
  /// All of the landing's bytes are in.
  void landed(const Landing& landing, std::uint32_t length, MatchOutcomes& out);
  /// The landing's bytes will not come (what carried them broke): the message is lost. The receive that waited for
  /// it, if any, for the transport to fail.
  NetOp* abandon(const Landing& landing);

  /// The posted receives: all, or those of collective call `seq`.
  std::vector<NetOp*> posted() const;
  std::vector<NetOp*> postedForCall(std::int64_t seq) const;
  bool anyPosted() const { return !posted_.empty(); }
  /// Whether message `name` has begun arriving with no receive posted for it (its pieces are kept aside).
  bool kept(const MessageName& name) const {
    const auto it = stash_.find(name);
    return it != stash_.end() && !it->second->dead && it->second->op == nullptr;
  }
  /// The descriptor of a message kept aside for collective call `call.seq` that differs from `call`, if any.
  std::optional<CallDescriptor> keptForOtherCall(const CallDescriptor& call) const;
  /// Drops what is kept aside for collective calls before `seq` (they ended on this rank).
  void dropCallsBefore(std::int64_t seq);
  /// Payload bytes kept aside.
  std::size_t keptBytes() const { return keptBytes_; }

 private:
  /// The Mismatch text when `op` cannot take a message of `call` and `messageBytes`; "" when it can.
  std::string mismatch(const NetOp& op, const CallDescriptor& call, std::uint64_t messageBytes) const;
  void dropChunk(Chunk& chunk);
  void erase(const MessageName& name);

  const int peer_;
  const std::function<std::string(const CallDescriptor&)>* describe_;
  std::map<MessageName, NetOp*> posted_;
  std::map<MessageName, std::unique_ptr<Stash>> stash_;
  std::size_t keptBytes_ = 0;
};

}  // namespace braid::transport
