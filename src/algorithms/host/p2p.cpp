#include "algorithms/host/p2p.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "algorithms/host/any_source.hpp"
#include "algorithms/p2p_feed.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "base/logging.hpp"
#include "transport/process_memory.hpp"

namespace braid::host {

namespace {

constexpr std::uint32_t kMagic = 0x42503250;  // "BP2P"
constexpr std::size_t kCompactAfter = 64;     // completed operations a fed group keeps before dropping them
// A single-copy message's word (LocalFabric::singleCopyAnswer): the ticket of the message it speaks of, times four,
// plus where that message stands. Tickets count from 1, so the zeroed word speaks of none; they wrap at 2^30. The
// receiver claims a message before it reads it and answers once done; a sender that fails first withdraws it, and
// whoever changes the word first decides: a withdrawn message is read by no one, a claimed one is waited for.
constexpr std::uint32_t kTicketMask = 0x3fffffffu;
constexpr std::uint32_t kClaimed = 0;    // the receiver is reading it
constexpr std::uint32_t kRead = 1;       // read whole (or dropped unread by a receive of another size)
constexpr std::uint32_t kRefused = 2;    // not read: its payload comes through the ring
constexpr std::uint32_t kWithdrawn = 3;  // its send failed: no one reads it, and no payload follows
// How long a failing sender waits for a receiver that claimed its message to finish reading it: a thread rank of
// its process copies with memcpy from memory the program may free once the send returns. A copy of hundreds of MiB
// takes well under it.
constexpr double kLingerSeconds = 2.0;

std::uint32_t ticketOf(std::uint32_t word) { return word >> 2; }
std::uint32_t standingOf(std::uint32_t word) { return word & 3u; }
std::uint32_t wordOf(std::uint32_t ticket, std::uint32_t standing) { return ticket << 2 | standing; }
// Whether `ticket` is `of` or later, in wrap-around order.
bool atOrAfter(std::uint32_t ticket, std::uint32_t of) { return ((ticket - of) & kTicketMask) < (kTicketMask >> 1); }

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

bool P2pEngine::singleCopyTo(int peer, std::uint64_t bytes) const {
  // Only what cannot sit in the ring: a smaller message completes once written, whether or not the peer reads yet
  // (two ranks that each send one and then receive rely on that).
  return singleCopy_ && !refusedBy_[peer] && peer != fabric_.rank() && bytes > fabric_.layout().ringBytes;
}

bool P2pEngine::readSingleCopy(int peer, const Header& h, Incoming& in, const OpEnv& env) {
  const std::uint32_t ticket = ++answered_[peer] & kTicketMask;
  std::atomic<std::uint32_t>& word = fabric_.singleCopyAnswer(peer, fabric_.rank());
  // The word speaks of the sender's previous message until this rank claims this one, unless the sender withdrew it
  // (or withdrew it and later ones: it asks again only once a message is decided).
  std::uint32_t seen = word.load(std::memory_order_acquire);
  do {
    if (atOrAfter(ticketOf(seen), ticket)) return false;
  } while (!word.compare_exchange_weak(seen, wordOf(ticket, kClaimed), std::memory_order_acq_rel,
                                       std::memory_order_acquire));
  // A receive of another size reads nothing (it fails with Mismatch once the message is through); the sender's send is
  // done all the same, as it is when its bytes cross the ring.
  std::string why;
  bool read = in.target == nullptr;
  if (!read && singleCopy_) {
    read = transport::readProcessMemory(transport::ProcessIdentity{h.pid, h.pidNamespace}, h.address, in.target,
                                        in.bytes, &why);
  } else if (!read) {
    why = "this rank reads no peer's memory";
  }
  // Once answered, the sender's buffer is its program's again. A sender that gave up waiting withdrew the message
  // meanwhile: what was read cannot be trusted, and no payload follows.
  std::uint32_t claimed = wordOf(ticket, kClaimed);
  const bool answered = word.compare_exchange_strong(claimed, wordOf(ticket, read ? kRead : kRefused),
                                                     std::memory_order_acq_rel, std::memory_order_acquire);
  fabric_.ring(peer);
  if (!answered) {
    in.active = false;
    ErrorContext ctx = env.context;
    ctx.peer = peer;
    fail(ErrorCode::kPeerLost, ctx, "peer ", peer, " withdrew its message (tag ", h.tag, ", ", h.bytes,
         " bytes) while this rank read it: its send failed");
  }
  if (!read) {
    logLine(LogLevel::kDebug, fabric_.rank(),
            strCat("large messages from peer ", peer, " cross the shared-memory ring: ", why));
    return true;  // the payload follows in the ring, read as any other
  }
  in.done = in.bytes;
  return true;
}

void P2pEngine::withdrawUnanswered() noexcept {
  for (std::size_t i = 0; i < ops_.size() && i < state_.size(); ++i) {
    if (!state_[i].awaitingAnswer) continue;
    const int peer = ops_[i].peer;
    const std::uint32_t ticket = state_[i].ticket;
    std::atomic<std::uint32_t>& word = fabric_.singleCopyAnswer(fabric_.rank(), peer);
    std::uint32_t seen = word.load(std::memory_order_acquire);
    // Not claimed yet: the receiver will find it withdrawn and read nothing.
    bool decided = false;
    while (ticketOf(seen) != ticket && !decided) {
      decided = word.compare_exchange_weak(seen, wordOf(ticket, kWithdrawn), std::memory_order_acq_rel,
                                           std::memory_order_acquire);
    }
    // Claimed: the receiver is reading the buffer. Not bounded by the peer's state: an aborted thread rank may still
    // be copying.
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kLingerSeconds);
    while (!decided && standingOf(seen) == kClaimed && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
      seen = word.load(std::memory_order_acquire);
    }
    // Still reading: withdrawn all the same, and that receiver fails its receive rather than trust what it read.
    if (!decided && standingOf(seen) == kClaimed) {
      word.compare_exchange_strong(seen, wordOf(ticket, kWithdrawn), std::memory_order_acq_rel,
                                   std::memory_order_acquire);
    }
    state_[i].awaitingAnswer = false;
  }
}

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
        env.feed->completed(base + i);
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
      if (env.feed == nullptr) return;
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
      if (singleCopyTo(op.peer, s.bytes)) {
        const transport::ProcessIdentity& me = transport::thisProcess();
        h.address = reinterpret_cast<std::uintptr_t>(op.buffer);
        h.pidNamespace = me.pidNamespace;
        h.pid = me.pid;
        s.awaitingAnswer = true;
        s.ticket = ++asked_[op.peer] & kTicketMask;
      }
      // The header and what of the payload fits go together: one publication, one ring of the peer's doorbell.
      const std::size_t payload = s.awaitingAnswer ? 0 : s.bytes;
      s.done = fabric_.ringWrite(op.peer, &h, sizeof h, op.buffer, payload);
      s.headerSent = true;
      progressed = true;
    }
    if (s.awaitingAnswer) {
      // Later sends to the peer wait behind it (busy): one question to a peer at a time, so its answer is this one's.
      const std::uint32_t answer = fabric_.singleCopyAnswer(fabric_.rank(), op.peer).load(std::memory_order_acquire);
      if (ticketOf(answer) != s.ticket || standingOf(answer) == kClaimed) continue;
      s.awaitingAnswer = false;
      progressed = true;
      if (standingOf(answer) == kRefused) {
        refusedBy_[op.peer] = true;  // this one and the later ones go through the ring
      } else {
        s.done = s.bytes;
      }
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
  if (found->data.size() != s.bytes) {
    const std::size_t got = found->data.size();
    queue.erase(found);
    ErrorContext ctx = env.context;
    ctx.peer = peer;
    fail(ErrorCode::kMismatch, ctx, "peer ", peer, " sent ", got, " bytes with tag ", op.tag,
         " but this rank posted a receive of ", s.bytes, " bytes");
  }
  if (s.bytes != 0) std::memcpy(op.buffer, found->data.data(), s.bytes);
  queue.erase(found);
  s.done = s.bytes;
  s.matched = s.complete = true;
  if (op.source != nullptr) *op.source = peer;
  return true;
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
      if (h.address != 0 && !readSingleCopy(peer, h, in, env)) {
        in.active = false;
        if (in.op < 0) {
          unexpected_[peer].pop_back();  // no receive waits for it yet: it never arrived
          continue;
        }
        state[in.op].complete = true;
        ErrorContext ctx = env.context;
        ctx.peer = peer;
        std::string why = fabric_.peerFailure(peer);
        if (why.empty()) why = fabric_.peerBroke(peer);
        fail(ErrorCode::kPeerLost, ctx, "peer ", peer, " withdrew its message (tag ", h.tag, ", ", h.bytes,
             " bytes) before this rank read it: its send failed", why.empty() ? "" : strCat(" (", why, ")"));
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
      if (in.sizeMismatch) {
        ErrorContext ctx = env.context;
        ctx.peer = peer;
        fail(ErrorCode::kMismatch, ctx, "peer ", peer, " sent ", in.bytes, " bytes with tag ", in.tag,
             " but this rank posted a receive of ", s.bytes, " bytes");
      }
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
