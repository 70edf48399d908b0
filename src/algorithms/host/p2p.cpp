#include "algorithms/host/p2p.hpp"

#include <cstring>
#include <exception>
#include <string>

#include "algorithms/host/any_source.hpp"
#include "algorithms/p2p_feed.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "base/logging.hpp"

namespace braid::host {

namespace {

constexpr std::uint32_t kMagic = 0x42503250;  // "BP2P"
constexpr std::size_t kCompactAfter = 64;     // completed operations a fed group keeps before dropping them
std::uint64_t bytesOf(const P2pOp& op) { return op.count * dataTypeSize(op.type); }

}  // namespace

P2pEngine::P2pEngine(transport::LocalFabric& fabric, bool singleCopy)
    : fabric_(fabric),
      unexpected_(fabric.size()),
      incoming_(fabric.size()),
      singleCopy_(singleCopy),
      asked_(fabric.size(), 0),
      answered_(fabric.size(), 0),
      refusedBy_(fabric.size(), false) {}

void P2pEngine::run(std::span<const P2pOp> given, const OpEnv& env) {
  try {
    runGroup(given, env);
  } catch (...) {
    withdrawUnanswered();
    throw;
  }
}

void P2pEngine::runGroup(std::span<const P2pOp> given, const OpEnv& env) {
  // A message still being read into a receive of an earlier group, which failed (a run ends normally only once
  // its receives completed), goes nowhere: that receive and its buffer are gone.
  for (Incoming& in : incoming_) {
    if (in.active && in.op >= 0) {
      in.op = -1;
      in.target = nullptr;
      in.discard = true;
    }
  }
  // The group's operations: those given, then those that join it through env.feed; the feed numbers them in that
  // order, and ops[i] is its number base + i.
  // Kept by the engine between runs, so that a small message's call allocates nothing.
  std::vector<P2pOp>& ops = ops_;
  ops.assign(given.begin(), given.end());
  std::vector<Pending>& state = state_;
  state.clear();
  std::vector<bool>& told = told_;  // with a feed: completed() was called for it
  told.clear();
  std::size_t base = 0;  // the feed's index of ops[0]: completed ones leave the front of the lists
  auto admit = [&](std::size_t from) {
    state.resize(ops.size());
    told.resize(ops.size(), false);
    for (std::size_t i = from; i < ops.size(); ++i) {
      state[i].bytes = bytesOf(ops[i]);
      if (ops[i].kind == P2pOp::Kind::kRecv) takeUnexpected(ops[i], state[i], env);
    }
  };
  admit(0);

  int blockedOn = -1;  // a peer an incomplete op waits for, for errors
  transport::WaitPolicy policy;
  policy.spinMicros = env.spinMicros;
  policy.yieldWhileSpinning = env.yieldWhileSpinning;
  policy.timeoutSeconds = env.timeoutSeconds;
  policy.deadline = &env.deadline;
  policy.sliceMicros = env.sliceMicros;
  const auto checkWait = [&] {
    checkCall(env);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      // Only what is still pending: a peer may leave once it has everything this rank sent it (a completed send to
      // it is no reason to fail the operations still waiting for other peers), and what it wrote before it left is
      // still read (a receive fails only once its ring is empty).
      const P2pOp& op = ops[i];
      if (op.peer == fabric_.rank() || state[i].complete) continue;
      // A receive from any source that took a message waits for that peer alone.
      const int peer = op.peer == kAnySource && state[i].matched ? boundPeer(i) : op.peer;
      if (peer == kAnySource) {
        checkAnySourcePeers(
            fabric_.rank(), fabric_.size(), op.tag, env.context, [&](int p) { return fabric_.peerFailure(p); },
            [&](int p) { return fabric_.peerLeft(p); },
            [&] {
              for (int p = 0; p < fabric_.size(); ++p) {
                if (fabric_.ringAvailable(p) > 0) return true;
              }
              return false;
            });
        continue;
      }
      if (peer < 0 || peer == fabric_.rank()) continue;
      // Liveness only, not peerBroke: the survivors of a failure shrink their communicator through these calls.
      // The ring is looked at after the peer's state: a peer writes its last message and then leaves.
      const std::string why = fabric_.peerFailure(peer);
      if (!why.empty() && !(op.kind == P2pOp::Kind::kRecv && fabric_.ringAvailable(peer) > 0)) {
        ErrorContext ctx = env.context;
        ctx.peer = peer;
        fail(ErrorCode::kPeerLost, ctx, why, " before its ", op.kind == P2pOp::Kind::kSend ? "receive" : "send",
             " (tag ", op.tag, ") completed");
      }
    }
  };
  const auto failTimedOut = [&] {
    ErrorContext ctx = env.context;
    ctx.peer = blockedOn;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!state[i].complete) {
        if (ops[i].peer == kAnySource) {
          const int from = boundPeer(i);
          if (from >= 0) ctx.peer = from;
          fail(ErrorCode::kTimeout, ctx, "receive from any source (tag ", ops[i].tag, ", ", state[i].bytes, " bytes) ",
               from >= 0 ? strCat("got only part of peer ", from, "'s message") : std::string("got no message"),
               " before the timeout");
        }
        fail(ErrorCode::kTimeout, ctx, ops[i].kind == P2pOp::Kind::kSend ? "send to" : "receive from", " peer ",
             ops[i].peer, " (tag ", ops[i].tag, ", ", state[i].bytes, " bytes) moved ", state[i].done,
             " bytes before the timeout");
      }
    }
    fail(ErrorCode::kTimeout, ctx, "point-to-point group timed out");
  };
  policy.check = checkWait;
  policy.onTimeout = failTimedOut;

  // What a collective run inside the group calls between its sleeps: the group's messages move meanwhile, so that a
  // peer still sending to this rank (or waiting for its receive) before it reaches that collective gets there. Its
  // errors wait for the collective to end: they are the group's.
  std::exception_ptr failedAlongside;
  const auto keepMoving = [&] {
    if (failedAlongside) return;
    try {
      const bool sent = progressSends(ops, state, env);
      const bool received = progressReceives(ops, state, env);
      if (sent || received) env.feed->moved();
    } catch (...) {
      failedAlongside = std::current_exception();
    }
  };

  transport::WaitWord& bell = fabric_.doorbell(fabric_.rank());
  while (true) {
    const std::uint32_t seen = bell.value.load(std::memory_order_acquire);
    // Collectives posted since the last look run now, and operations posted join (the feed rings this rank's doorbell
    // when it has either).
    if (env.feed != nullptr) {
      env.feed->interleave(keepMoving);
      if (failedAlongside) std::rethrow_exception(failedAlongside);
    }
    const std::size_t before = ops.size();
    const bool joined = env.feed != nullptr && env.feed->take(ops);
    if (joined) admit(before);
    const bool sent = progressSends(ops, state, env);
    const bool received = progressReceives(ops, state, env);
    if ((sent || received) && env.feed != nullptr) env.feed->moved();
    bool all = true;
    std::size_t firstPending = ops.size();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!state[i].complete) {
        if (all) {
          blockedOn = ops[i].peer;
          firstPending = i;
        }
        all = false;
      } else if (env.feed != nullptr && !told[i]) {
        told[i] = true;
        if (state[i].failure) {
          env.feed->failed(base + i, *state[i].failure);
        } else {
          env.feed->completed(base + i);
        }
      }
    }
    if (env.feed != nullptr && firstPending >= kCompactAfter) {
      // A group that calls keep joining may never end: what completed leaves, so that it costs what is pending.
      forget(firstPending, ops, state, told);
      base += firstPending;
      if (all) continue;  // ask the feed once more before the group ends
    }
    if (all) {
      // Done, unless more joined meanwhile: the feed is asked once more before the group ends.
      if (env.feed == nullptr) {
        for (const Pending& s : state) {
          if (s.failure) throw *s.failure;
        }
        return;
      }
      const std::size_t size = ops.size();
      if (!env.feed->take(ops)) return;  // a collective queued meanwhile runs on the progress loop
      admit(size);
      continue;
    }
    if (!sent && !received && !joined) {
      transport::waitUntil(
          bell, [seen](std::uint32_t v) { return v != seen; }, policy);
    }
  }
}

void P2pEngine::wake() { fabric_.ring(fabric_.rank()); }

void P2pEngine::forget(std::size_t n, std::vector<P2pOp>& ops, std::vector<Pending>& state, std::vector<bool>& told) {
  ops.erase(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(n));
  state.erase(state.begin(), state.begin() + static_cast<std::ptrdiff_t>(n));
  told.erase(told.begin(), told.begin() + static_cast<std::ptrdiff_t>(n));
  // A message being read into a posted receive names it by index; that receive is pending, so at or after n.
  for (Incoming& in : incoming_) {
    if (in.active && in.op >= 0) in.op -= static_cast<int>(n);
  }
}

bool P2pEngine::progressSends(std::span<const P2pOp> ops, std::vector<Pending>& state, const OpEnv&) {
  bool progressed = false;
  std::vector<bool>& busy = busy_;  // sends to one peer go one after another, in posting order
  busy.assign(static_cast<std::size_t>(fabric_.size()), false);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const P2pOp& op = ops[i];
    Pending& s = state[i];
    if (op.kind != P2pOp::Kind::kSend || s.complete) continue;
    if (busy[op.peer]) continue;
    busy[op.peer] = true;
    if (!s.headerSent) {
      if (fabric_.ringFree(op.peer, sizeof(Header)) < sizeof(Header)) continue;
      Header h{kMagic, op.tag, s.bytes, 0, 0, 0, 0};
      if (singleCopyTo(op.peer, s.bytes)) askSingleCopy(op, h, s);
      // The header and what of the payload fits go together: one publication, one ring of the peer's doorbell.
      const std::size_t payload = s.awaitingAnswer ? 0 : s.bytes;
      s.done = fabric_.ringWrite(op.peer, &h, sizeof h, op.buffer, payload);
      s.headerSent = true;
      progressed = true;
    }
    if (s.awaitingAnswer) {
      // Later sends to the peer wait behind it (busy): one question to a peer at a time, so its answer is this one's.
      const Answer answer = answerTo(op.peer, s);
      if (answer == Answer::kNone) continue;
      s.awaitingAnswer = false;
      progressed = true;
      if (answer == Answer::kRefused) {
        // This one (asked again, under a header of its own) and the later ones go through the ring.
        refusedBy_[op.peer] = true;
        s.headerSent = false;
        continue;
      }
      s.done = s.bytes;
    }
    if (s.done < s.bytes) {
      const std::size_t n =
          fabric_.ringWrite(op.peer, static_cast<const std::byte*>(op.buffer) + s.done, s.bytes - s.done);
      s.done += n;
      progressed |= n > 0;
    }
    if (s.done == s.bytes) {
      s.complete = true;
      busy[op.peer] = false;
    }
  }
  return progressed;
}

bool P2pEngine::takeUnexpected(const P2pOp& op, Pending& s, const OpEnv& env) {
  // The earliest message with the tag among the peers it may come from; the one still arriving from a peer is always
  // the last entry of that peer's queue, and waits until it is whole.
  int peer = -1;
  std::deque<Unexpected>::iterator found;
  const int from = op.peer == kAnySource ? 0 : op.peer;
  const int to = op.peer == kAnySource ? fabric_.size() : op.peer + 1;
  for (int p = from; p < to; ++p) {
    auto& queue = unexpected_[p];
    const Incoming& in = incoming_[p];
    for (auto it = queue.begin(); it != queue.end(); ++it) {
      if (it->tag != op.tag) continue;
      const bool stillArriving = in.active && in.op < 0 && !in.discard && std::next(it) == queue.end();
      if (!stillArriving && (peer < 0 || it->arrival < found->arrival)) {
        peer = p;
        found = it;
      }
      break;  // a peer's messages with one tag are taken in order
    }
  }
  if (peer < 0) return false;
  auto& queue = unexpected_[peer];
  if (found->withdrawn) {
    const int tag = found->tag;
    queue.erase(found);
    failWithdrawn(peer, tag, env);
  }
  if (found->data.size() != s.bytes) {
    failOnSize(s, peer, op.tag, found->data.size(), env);
  } else if (s.bytes != 0) {
    std::memcpy(op.buffer, found->data.data(), s.bytes);
  }
  queue.erase(found);
  s.done = s.bytes;
  s.matched = s.complete = true;
  if (op.source != nullptr) *op.source = peer;
  return true;
}

void P2pEngine::failWithdrawn(int peer, int tag, const OpEnv& env) {
  ErrorContext ctx = env.context;
  ctx.peer = peer;
  std::string why = fabric_.peerFailure(peer);
  if (why.empty()) why = fabric_.peerBroke(peer);
  fail(ErrorCode::kPeerLost, ctx, "peer ", peer, " withdrew its message with tag ", tag,
       ": its send failed before this rank had read it", why.empty() ? "" : strCat(" (", why, ")"));
}

void P2pEngine::failOnSize(Pending& s, int peer, int tag, std::uint64_t sent, const OpEnv& env) {
  ErrorContext ctx = env.context;
  ctx.peer = peer;
  s.failure.emplace(ErrorCode::kMismatch,
                    strCat("peer ", peer, " sent ", sent, " bytes with tag ", tag,
                           " but this rank posted a receive of ", s.bytes, " bytes"),
                    ctx);
  s.done = s.bytes;
  s.complete = true;
}

int P2pEngine::boundPeer(std::size_t op) const {
  for (std::size_t p = 0; p < incoming_.size(); ++p) {
    if (incoming_[p].active && incoming_[p].op == static_cast<int>(op)) return static_cast<int>(p);
  }
  return -1;
}

bool P2pEngine::wantsFrom(int peer, std::span<const P2pOp> ops, const std::vector<Pending>& state) {
  for (std::size_t j = 0; j < ops.size(); ++j) {
    const P2pOp& op = ops[j];
    if (op.kind == P2pOp::Kind::kRecv && !state[j].matched && (op.peer == peer || op.peer == kAnySource)) return true;
  }
  return false;
}

bool P2pEngine::progressReceives(std::span<const P2pOp> ops, std::vector<Pending>& state, const OpEnv& env) {
  bool progressed = false;
  const int n = fabric_.size();
  bool anySource = false;
  std::vector<bool>& wanted = wanted_;
  wanted.assign(static_cast<std::size_t>(n), false);
  for (std::size_t j = 0; j < ops.size(); ++j) {
    const P2pOp& op = ops[j];
    if (op.kind != P2pOp::Kind::kRecv || state[j].complete) continue;
    if (op.peer == kAnySource) {
      anySource = true;
    } else {
      wanted[op.peer] = true;
    }
  }
  // A message already arriving is read on whatever receive it goes to (or kept aside).
  for (int p = 0; p < n; ++p) wanted[p] = wanted[p] || anySource || incoming_[p].active;
  for (int k = 0; k < n; ++k) {
    const int peer = (firstPeer_ + k) % n;
    if (wanted[peer]) progressed |= readFrom(peer, ops, state, env);
  }
  if (anySource) firstPeer_ = (firstPeer_ + 1) % n;
  return progressed;
}

bool P2pEngine::readFrom(int peer, std::span<const P2pOp> ops, std::vector<Pending>& state, const OpEnv& env) {
  bool progressed = false;
  Incoming& in = incoming_[peer];
  while (true) {
    if (!in.active) {
      // A new message only for a receive that may take it: others stay in the ring (TCP's back-pressure, here).
      if (!wantsFrom(peer, ops, state) || fabric_.ringAvailable(peer) < sizeof(Header)) break;
      Header h{};
      fabric_.ringRead(peer, &h, sizeof h);
      if (h.magic != kMagic) {
        ErrorContext ctx = env.context;
        ctx.peer = peer;
        fail(ErrorCode::kInternal, ctx, "corrupt point-to-point stream from peer ", peer);
      }
      in = Incoming{.active = true, .tag = h.tag, .bytes = h.bytes};
      // The first receive posted that may take it (its peer, or any source).
      for (std::size_t j = 0; j < ops.size(); ++j) {
        const P2pOp& op = ops[j];
        if (op.kind == P2pOp::Kind::kRecv && (op.peer == peer || op.peer == kAnySource) && op.tag == h.tag &&
            !state[j].matched) {
          in.op = static_cast<int>(j);
          state[j].matched = true;
          in.sizeMismatch = state[j].bytes != h.bytes;
          in.target = in.sizeMismatch ? nullptr : static_cast<std::byte*>(op.buffer);
          break;
        }
      }
      if (in.op < 0) {
        unexpected_[peer].push_back(Unexpected{h.tag, std::vector<std::byte>(h.bytes), arrivals_++});
        in.target = unexpected_[peer].back().data.data();
      }
      progressed = true;
      if (h.address != 0) {
        const Copied copied = readSingleCopy(peer, h, in);
        if (copied == Copied::kRefused) {
          // It comes again, through the ring, and is matched again; meanwhile nothing took its place.
          in.active = false;
          if (in.op >= 0) {
            state[in.op].matched = false;
          } else {
            unexpected_[peer].pop_back();
          }
          continue;
        }
        if (copied == Copied::kWithdrawn) {
          in.active = false;
          if (in.op < 0) {
            // The receive that takes it fails.
            unexpected_[peer].back().withdrawn = true;
            unexpected_[peer].back().data = {};
            continue;
          }
          state[in.op].complete = true;
          failWithdrawn(peer, h.tag, env);
        }
      }
    }
    if (in.done < in.bytes) {
      const std::size_t got = fabric_.ringRead(peer, in.target ? in.target + in.done : nullptr, in.bytes - in.done);
      in.done += got;
      progressed |= got > 0;
    }
    if (in.done < in.bytes) break;
    // A whole message has arrived.
    in.active = false;
    if (in.op >= 0) {
      Pending& s = state[in.op];
      s.done = s.bytes;
      s.complete = true;
      if (in.sizeMismatch) failOnSize(s, peer, in.tag, in.bytes, env);
      if (ops[in.op].source != nullptr) *ops[in.op].source = peer;
    } else if (!in.discard) {
      // Kept aside: a receive posted meanwhile, of this peer or any, may take it now (in posting order).
      for (std::size_t j = 0; j < ops.size(); ++j) {
        const P2pOp& op = ops[j];
        if (op.kind == P2pOp::Kind::kRecv && (op.peer == peer || op.peer == kAnySource) && !state[j].matched) {
          takeUnexpected(op, state[j], env);
        }
      }
    }
  }
  return progressed;
}

}  // namespace braid::host
