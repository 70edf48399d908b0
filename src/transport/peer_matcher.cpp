#include "transport/peer_matcher.hpp"

#include <cstring>

namespace braid::transport {

std::string PeerMatcher::mismatch(const NetOp& op, const CallDescriptor& call, std::uint64_t messageBytes) const {
  if (op.kind == MessageKind::kCollective && !(op.call == call)) {
    const auto say = [this](const CallDescriptor& d) {
      return describe_ && *describe_ ? (*describe_)(d) : strCat("call #", d.seq);
    };
    return strCat("this rank called ", say(op.call), " but peer ", peer_, " called ", say(call));
  }
  if (messageBytes != op.bytes) {
    return op.kind == MessageKind::kPointToPoint
               ? strCat("peer ", peer_, " sent ", messageBytes, " bytes with tag ", op.key, " but this rank receives ",
                        op.bytes, " bytes")
               : strCat("peer ", peer_, " sent ", messageBytes, " bytes as message ", op.step, " of ", op.key,
                        " but this rank expects ", op.bytes, " bytes");
  }
  return {};
}

void PeerMatcher::post(NetOp& op, MatchOutcomes& out) {
  const MessageName name = MessageName::of(op);
  if (posted_.count(name) != 0) {
    out.failOp(op, ErrorCode::kInternal, strCat("two receives posted for message ", op.key, "/", op.step));
    return;
  }
  op.posted = true;
  posted_.emplace(name, &op);
  const auto it = stash_.find(name);
  if (it == stash_.end() || it->second->dead) return;
  Stash& st = *it->second;
  if (std::string why = mismatch(op, st.call, st.messageBytes); !why.empty()) {
    st.dead = true;
    if (st.inFlight == 0) erase(name);
    out.failOp(op, ErrorCode::kMismatch, std::move(why));
    return;
  }
  for (Chunk& chunk : st.chunks) {
    if (!chunk.complete) continue;
    if (!chunk.data.empty()) std::memcpy(op.data + chunk.offset, chunk.data.data(), chunk.data.size());
    op.done += chunk.data.size();
    dropChunk(chunk);
  }
  const bool zeroByteMessageArrived = op.bytes == 0 && st.inFlight == 0;
  if (st.inFlight == 0) {
    erase(name);
  } else {
    st.op = &op;
  }
  if (op.done == op.bytes && (op.bytes > 0 || zeroByteMessageArrived)) out.complete(op);
}

void PeerMatcher::forget(NetOp& op) {
  if (op.posted) {
    posted_.erase(MessageName::of(op));
    op.posted = false;
  }
  for (auto& [name, st] : stash_) {
    if (st->op == &op) {
      st->op = nullptr;
      st->dead = true;
    }
  }
}

PeerMatcher::Landing PeerMatcher::arrive(const Piece& piece, MatchOutcomes& out) {
  if (auto it = posted_.find(piece.name); it != posted_.end()) {
    NetOp& op = *it->second;
    if (std::string why = mismatch(op, piece.call, piece.messageBytes); !why.empty()) {
      out.failOp(op, ErrorCode::kMismatch, std::move(why));
      return {};
    }
    return Landing{&op, nullptr, nullptr, op.data + piece.offset};
  }
  auto& slot = stash_[piece.name];
  if (!slot) {
    slot = std::make_unique<Stash>();
    slot->name = piece.name;
    slot->call = piece.call;
    slot->messageBytes = piece.messageBytes;
  }
  if (slot->dead) return {};
  Chunk& chunk = slot->chunks.emplace_back(Chunk{piece.offset, std::vector<std::byte>(piece.length), false});
  keptBytes_ += piece.length;
  ++slot->inFlight;
  return Landing{nullptr, slot.get(), &chunk, chunk.data.data()};
}

void PeerMatcher::landed(const Landing& landing, std::uint32_t length, MatchOutcomes& out) {
  if (landing.op != nullptr) {
    NetOp& op = *landing.op;
    op.done += length;
    if (op.done == op.bytes) out.complete(op);
    return;
  }
  if (landing.stash == nullptr) return;
  Stash& st = *landing.stash;
  Chunk& chunk = *landing.chunk;
  chunk.complete = true;
  --st.inFlight;
  if (st.op != nullptr && !st.dead) {
    NetOp& op = *st.op;
    if (!chunk.data.empty()) std::memcpy(op.data + chunk.offset, chunk.data.data(), chunk.data.size());
    op.done += chunk.data.size();
    dropChunk(chunk);
    if (st.inFlight == 0) st.dead = true;  // everything it held went to op; later pieces go to op directly
    if (op.done == op.bytes) out.complete(op);
  }
  if (st.dead && st.inFlight == 0) erase(st.name);  // last use of st
}

NetOp* PeerMatcher::abandon(const Landing& landing) {
  if (landing.op != nullptr) return landing.op;
  if (landing.stash == nullptr) return nullptr;
  Stash& st = *landing.stash;
  --st.inFlight;
  st.dead = true;
  NetOp* waiting = st.op;
  if (st.inFlight == 0) erase(st.name);
  return waiting;
}

std::vector<NetOp*> PeerMatcher::posted() const {
  std::vector<NetOp*> ops;
  for (const auto& [name, op] : posted_) ops.push_back(op);
  return ops;
}

std::vector<NetOp*> PeerMatcher::postedForCall(std::int64_t seq) const {
  std::vector<NetOp*> ops;
  for (const auto& [name, op] : posted_) {
    if (name.kind == MessageKind::kCollective && name.key == seq) ops.push_back(op);
  }
  return ops;
}

std::optional<CallDescriptor> PeerMatcher::keptForOtherCall(const CallDescriptor& call) const {
  for (const auto& [name, st] : stash_) {
    if (name.kind == MessageKind::kCollective && name.key == call.seq && !(st->call == call)) return st->call;
  }
  return std::nullopt;
}

void PeerMatcher::dropCallsBefore(std::int64_t seq) {
  for (auto it = stash_.begin(); it != stash_.end();) {
    Stash& st = *it->second;
    if (st.name.kind != MessageKind::kCollective || st.name.key >= seq) {
      ++it;
    } else if (st.inFlight > 0) {
      st.dead = true;  // the pieces still arriving drop it when they land
      st.op = nullptr;
      ++it;
    } else {
      for (Chunk& chunk : st.chunks) keptBytes_ -= chunk.data.size();
      it = stash_.erase(it);
    }
  }
}

void PeerMatcher::dropChunk(Chunk& chunk) {
  keptBytes_ -= chunk.data.size();
  std::vector<std::byte>().swap(chunk.data);
}

void PeerMatcher::erase(const MessageName& name) {
  const auto it = stash_.find(name);
  if (it == stash_.end()) return;
  for (Chunk& chunk : it->second->chunks) keptBytes_ -= chunk.data.size();
  stash_.erase(it);
}

}  // namespace braid::transport
