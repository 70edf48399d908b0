#include "algorithms/host/net/net_p2p.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include "algorithms/host/any_source.hpp"
#include "algorithms/host/copy.hpp"
#include "algorithms/p2p_feed.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"

namespace braid::host {

transport::NetOp* NetPointToPoint::post(NetCall& call, const P2pOp& op, const OpEnv& env) {
  const std::size_t bytes = op.count * dataTypeSize(op.type);
  if (op.peer == net_.rank()) {
    if (op.kind == P2pOp::Kind::kSend) return nullptr;  // kept in toSelf_ when its batch was posted
    const auto it = toSelf_.find(op.tag);               // multimap: the first of equal keys is the oldest
    if (it == toSelf_.end()) {
      fail(ErrorCode::kInvalidArgument, env.context, "receive from itself (tag ", op.tag,
           ") has no send to itself before it or in the same group: it would wait forever");
    }
    if (it->second.size() != bytes) {
      const std::size_t sent = it->second.size();
      toSelf_.erase(it);
      fail(ErrorCode::kMismatch, env.context, "rank ", net_.rank(), " sent itself ", sent, " bytes with tag ", op.tag,
           " but receives ", bytes, " bytes");
    }
    copyBytes(op.buffer, it->second.data(), bytes);
    toSelf_.erase(it);
    if (op.source != nullptr) *op.source = op.peer;
    return nullptr;
  }
  const std::pair<int, int> pairTag{op.peer, op.tag};
  if (op.kind == P2pOp::Kind::kSend) return &call.send(op.peer, sent_[pairTag]++, op.buffer, bytes, op.tag);
  return &call.recv(op.peer, received_[pairTag]++, op.buffer, bytes, op.tag);
}

int NetPointToPoint::arrivedFrom(int tag) {
  const int n = net_.size();
  for (int k = 0; k < n; ++k) {
    const int peer = (firstPeer_ + k) % n;
    const auto next = received_.find({peer, tag});
    if (peer == net_.rank() ? toSelf_.contains(tag)
                            : net_.arrived(peer, transport::MessageKind::kPointToPoint, tag,
                                           next == received_.end() ? 0 : next->second)) {
      firstPeer_ = (peer + 1) % n;
      return peer;
    }
  }
  return -1;
}

void NetPointToPoint::run(std::span<const P2pOp> ops, const OpEnv& env) {
  NetCall call(net_, transport::CallDescriptor{}, env, spinMicros_, transport::MessageKind::kPointToPoint);
  std::vector<Posted> waiting;
  std::deque<Held> held;  // receives from any source not yet bound, and receives of their tags behind them
  std::size_t next = 0;   // the feed's index of the next operation posted
  const auto done = [&](std::size_t index) {
    if (env.feed != nullptr) env.feed->completed(index);
  };
  const auto start = [&](std::size_t index, const P2pOp& op) {
    // Its peer is known now (a receive from any source was bound to one): that is where its message comes from.
    if (op.kind == P2pOp::Kind::kRecv && op.source != nullptr) *op.source = op.peer;
    if (transport::NetOp* posted = post(call, op, env)) {
      waiting.push_back({index, posted});
    } else {
      done(index);
    }
  };
  const auto postBatch = [&](std::span<const P2pOp> batch) {
    // Messages to itself first, so that a group holding both halves completes.
    for (const P2pOp& op : batch) {
      if (op.kind != P2pOp::Kind::kSend || op.peer != net_.rank()) continue;
      const auto* data = static_cast<const std::byte*>(op.buffer);
      toSelf_.emplace(op.tag, std::vector<std::byte>(data, data + op.count * dataTypeSize(op.type)));
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const P2pOp& op = batch[i];
      const bool behind = std::any_of(held.begin(), held.end(), [&](const Held& h) { return h.op.tag == op.tag; });
      if (op.kind == P2pOp::Kind::kRecv && (op.peer == kAnySource || behind)) {
        held.push_back({next + i, op});
      } else {
        start(next + i, op);
      }
    }
    next += batch.size();
  };
  // Binds the held receives whose message can be named now, in posting order.
  const auto bind = [&] {
    std::set<int> blocked;  // tags of a receive from any source still unbound, ahead of the rest
    for (auto it = held.begin(); it != held.end();) {
      if (blocked.contains(it->op.tag)) {
        ++it;
        continue;
      }
      P2pOp op = it->op;
      if (op.peer == kAnySource) op.peer = arrivedFrom(op.tag);
      if (op.peer < 0) {
        blocked.insert(op.tag);
        ++it;
        continue;
      }
      start(it->index, op);
      it = held.erase(it);
    }
  };
  const auto firstAnySource = [&] {
    return std::find_if(held.begin(), held.end(), [](const Held& h) { return h.op.peer == kAnySource; });
  };
  // A receive from any source waits on every peer (any_source.hpp): throws once it cannot count on its message.
  const auto checkPeers = [&] {
    const auto any = firstAnySource();
    if (any == held.end()) return;
    checkAnySourcePeers(
        net_.rank(), net_.size(), any->op.tag, env.context, [&](int p) { return net_.peerFailure(p); },
        [&](int p) { return net_.peerLeft(p); }, [&] { return arrivedFrom(any->op.tag) >= 0; });
  };
  std::uint64_t movedBefore = net_.pointToPointBytesMoved();
  // Asked after each of the wait's wake-ups: it also tells the feed when the group's bytes moved.
  const std::function<bool()> interrupted = [&] {
    if (env.feed != nullptr) {
      const std::uint64_t moved = net_.pointToPointBytesMoved();
      if (moved != movedBefore) {
        movedBefore = moved;
        env.feed->moved();
      }
      if (env.feed->posted()) return true;
    }
    if (held.empty()) return false;
    for (const Held& h : held) {
      if (h.op.peer == kAnySource && arrivedFrom(h.op.tag) >= 0) return true;
    }
    // Thrown from here, the error ends the wait; the call's ops are cancelled as it unwinds.
    checkPeers();
    return false;
  };

  postBatch(ops);
  if (env.feed == nullptr && held.empty()) {
    // A blocking group of named operations: every one is posted.
    call.waitAll();
    return;
  }
  // While a receive from any source waits, the transport reads every peer: its message may be behind others kept
  // aside.
  struct ReadingAll {
    transport::NetTransport& net;
    bool on = false;
    void set(bool want) {
      if (want != on) net.readEveryPeer(on = want);
    }
    ~ReadingAll() {
      try {
        set(false);
      } catch (...) {  // NOLINT(bugprone-empty-catch): a mutex that cannot lock while unwinding changes nothing here
      }
    }
  } readingAll{net_};
  std::vector<P2pOp> joined;
  std::vector<transport::NetOp*> view;
  while (true) {
    bind();
    readingAll.set(firstAnySource() != held.end());
    std::erase_if(waiting, [&](const Posted& w) {
      if (w.op->state.load(std::memory_order_acquire) != transport::NetOp::kDone) return false;
      done(w.index);
      return true;
    });
    // Only ops this loop has reported: one that completed since the erase above is still in `waiting`.
    call.forgetDone([&](const transport::NetOp& op) {
      return std::none_of(waiting.begin(), waiting.end(), [&](const Posted& w) { return w.op == &op; });
    });
    joined.clear();
    // Collectives posted since the last look run now (the transport moves the group's posted messages during their
    // waits; receives from any source still held are bound after them), and operations posted join.
    if (env.feed != nullptr) env.feed->interleave({});
    if (env.feed != nullptr && env.feed->take(joined)) {
      postBatch(joined);
      continue;
    }
    if (waiting.empty() && held.empty()) return;
    checkPeers();
    view.clear();
    for (const Posted& w : waiting) view.push_back(w.op);
    call.waitAny(view, interrupted);
  }
}

}  // namespace braid::host
