#include "transport/tcp/tcp_mesh.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include "base/error.hpp"

namespace braid::tcp {

namespace {

constexpr std::uint64_t kWakeToken = ~std::uint64_t{0};
constexpr std::uint64_t kCompletionToken = ~std::uint64_t{0} - 1;
// Bytes one stream may read per readiness event before the loop turns to the others: one busy stream must not
// hold the lock (and the caller posting the next message) for long.
constexpr std::size_t kReadBudget = std::size_t{4} << 20;
constexpr std::size_t kDiscardBytes = 64 << 10;
// Set while a waiting caller handles events itself: what it completes it sees without being signalled.
thread_local bool tCallerHandling = false;
// How often the progress thread looks whether the caller that keeps it off the sockets has left.
constexpr int kStandAsideMs = 2;
// A blocked caller wakes at least this often to run its checks (abort, deadline).
constexpr int kSleepSliceMs = 20;
// The call a notice names when it is about every call (an abort).
constexpr std::int64_t kEveryCall = -1;

bool isWouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

struct TcpMesh::OutFrame {
  EncodedHeader header{};
  const std::byte* data = nullptr;
  std::uint32_t length = 0;
  MeshOp* op = nullptr;          // the send this frame belongs to; null for control frames and cancelled sends
  std::vector<std::byte> owned;  // notice text, or a cancelled send's payload copied out of the caller's buffer
};

struct TcpMesh::Stash {
  struct Chunk {
    std::uint64_t offset = 0;
    std::vector<std::byte> data;
    bool complete = false;
  };
  MatchKey key{};
  transport::CallDescriptor call;
  std::uint64_t messageBytes = 0;
  std::deque<Chunk> chunks;  // a deque: a chunk being filled keeps its address while others are added
  int inFlight = 0;          // chunks a stream is still reading into
  MeshOp* op = nullptr;      // a receive posted while chunks were in flight: they go to it when they complete
  bool dead = false;         // its receive failed or was cancelled: in-flight chunks are dropped
};

struct TcpMesh::Stream {
  Socket socket;
  int peer = -1;
  std::size_t index = 0;  // in streams_, the epoll token
  std::deque<OutFrame> out;
  std::size_t sent = 0;  // bytes of out.front() (header, then payload) already written
  bool writeInterest = false;
  bool broken = false;
  // Receiving: a header, then its payload into `target` (null: dropped).
  EncodedHeader inHeader{};
  std::size_t headerDone = 0;
  bool inPayload = false;
  FrameHeader frame;
  std::size_t payloadDone = 0;
  std::byte* target = nullptr;
  MeshOp* op = nullptr;
  Stash* stash = nullptr;
  Stash::Chunk* chunk = nullptr;
  std::vector<std::byte> noticeText;
};

struct TcpMesh::Peer {
  std::vector<Stream*> streams;
  std::chrono::steady_clock::time_point lastHeard = std::chrono::steady_clock::now();  // any byte from the peer
  std::chrono::steady_clock::time_point lastSent = std::chrono::steady_clock::now();   // any byte to it
  unsigned nextStream = 0;
  std::string lost;  // why the peer is gone; "" while connected
  bool saidGoodbye = false;
  int liveStreams = 0;
  std::string lastFailure;  // the text of the last notice it sent, whatever call it named
  int lastSuspect = -1;     // and the peer that notice blamed
  std::map<MatchKey, MeshOp*> posted;
  std::map<MatchKey, std::unique_ptr<Stash>> stash;
};

TcpMesh::TcpMesh(int rank, int size, std::vector<std::vector<Socket>> streams, MeshOptions options)
    : rank_(rank), size_(size), options_(std::move(options)) {
  if (static_cast<int>(streams.size()) != size) {
    fail(ErrorCode::kInternal, {}, "mesh of ", size, " ranks built from ", streams.size(), " peers' streams");
  }
  epollFd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epollFd_ < 0) failErrno("epoll_create1", errno);
  wakeFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wakeFd_ < 0) failErrno("eventfd", errno);
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.u64 = kWakeToken;
  if (::epoll_ctl(epollFd_, EPOLL_CTL_ADD, wakeFd_, &wake) != 0) failErrno("epoll_ctl(eventfd)", errno);
  // The caller's own set: the same streams plus an eventfd the other threads write when they complete an op the
  // caller may be blocked on. Two sets, so that the kernel wakes the caller itself for its sockets.
  waitEpollFd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (waitEpollFd_ < 0) failErrno("epoll_create1", errno);
  completionFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (completionFd_ < 0) failErrno("eventfd", errno);
  if (::epoll_ctl(waitEpollFd_, EPOLL_CTL_ADD, completionFd_, &wake) != 0) failErrno("epoll_ctl(eventfd)", errno);

  for (int p = 0; p < size; ++p) {
    peers_.push_back(std::make_unique<Peer>());
    for (Socket& socket : streams[static_cast<std::size_t>(p)]) {
      auto s = std::make_unique<Stream>();
      s->socket = std::move(socket);
      s->peer = p;
      s->index = streams_.size();
      if (options_.socketBufferBytes > 0) {
        const int bytes = static_cast<int>(std::min<std::size_t>(options_.socketBufferBytes, 1u << 30));
        ::setsockopt(s->socket.fd(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
        ::setsockopt(s->socket.fd(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
      }
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = s->index;
      if (::epoll_ctl(epollFd_, EPOLL_CTL_ADD, s->socket.fd(), &ev) != 0) failErrno("epoll_ctl(stream)", errno);
      if (::epoll_ctl(waitEpollFd_, EPOLL_CTL_ADD, s->socket.fd(), &ev) != 0) failErrno("epoll_ctl(stream)", errno);
      peers_.back()->streams.push_back(s.get());
      ++peers_.back()->liveStreams;
      streams_.push_back(std::move(s));
    }
    if (p != rank && peers_.back()->streams.empty()) {
      fail(ErrorCode::kInternal, {}, "mesh has no stream to peer ", p);
    }
  }
  progress_ = std::thread([this] { progressLoop(); });
  heartbeat_ = std::make_unique<transport::Ticker>(options_.heartbeatInterval, [this] { heartbeatTick(); });
}

TcpMesh::~TcpMesh() {
  heartbeat_.reset();  // it uses what follows
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    // Say goodbye so that peers still running tell a communicator destroyed in order from a crash.
    for (auto& s : streams_) {
      if (s->broken || !peer(s->peer).lost.empty() || s->index != peer(s->peer).streams.front()->index) continue;
      FrameHeader h;
      h.kind = FrameKind::kGoodbye;
      queueFrame(*s, OutFrame{encodeFrame(h)});
    }
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto ignored = ::write(wakeFd_, &one, sizeof one);
  if (progress_.joinable()) progress_.join();
  ::close(epollFd_);
  ::close(wakeFd_);
  ::close(waitEpollFd_);
  ::close(completionFd_);
}

std::string TcpMesh::peerFailure(int p) {
  std::lock_guard lock(mu_);
  return peer(p).lost;
}

// ---- posting and waiting (caller thread) ----

void TcpMesh::post(MeshOp& op) {
  if (op.peer < 0 || op.peer >= size_ || op.peer == rank_) {
    fail(ErrorCode::kInternal, {}, "mesh op addressed to peer ", op.peer, " of ", size_, " from rank ", rank_);
  }
  std::lock_guard lock(mu_);
  op.state.store(MeshOp::kPending, std::memory_order_relaxed);
  op.done = 0;
  op.error.clear();
  op.blame = -1;
  if (aborted_) {
    failOp(op, ErrorCode::kAborted, "the communicator was aborted on this rank");
    return;
  }
  Peer& p = peer(op.peer);
  if (op.dir == MeshOp::Dir::kSend) {
    if (!p.lost.empty()) {
      failOp(op, ErrorCode::kPeerLost, p.lost);
      return;
    }
    const std::size_t frames = op.bytes == 0 ? 1 : (op.bytes - 1) / kMaxFramePayload + 1;
    op.framesLeft = static_cast<std::uint32_t>(frames);
    for (std::size_t i = 0; i < frames; ++i) {
      FrameHeader h;
      h.kind = op.kind;
      h.key = op.key;
      h.step = op.step;
      h.call = op.call;
      h.messageBytes = op.bytes;
      h.offset = i * kMaxFramePayload;
      h.length = static_cast<std::uint32_t>(std::min(kMaxFramePayload, op.bytes - h.offset));
      Stream* pick = nullptr;
      for (std::size_t tries = 0; tries < p.streams.size() && !pick; ++tries) {
        Stream* candidate = p.streams[p.nextStream++ % p.streams.size()];
        if (!candidate->broken) pick = candidate;
      }
      if (!pick) {
        failOp(op, ErrorCode::kPeerLost,
               p.lost.empty() ? strCat("every connection to peer ", op.peer, " ended") : p.lost);
        return;
      }
      Stream& s = *pick;
      queueFrame(s, OutFrame{encodeFrame(h), op.data + h.offset, h.length, &op});
      if (op.state.load(std::memory_order_relaxed) != MeshOp::kPending) return;  // the stream broke
    }
    return;
  }
  const MatchKey key{op.kind, op.key, op.step};
  // A peer's notice explains more than its absence (it names the cause), so it is looked at first; a message
  // that arrived in full before its sender left is still good.
  if (op.kind == FrameKind::kCollective) {
    if (auto n = notices_.find(op.key); n != notices_.end()) {
      op.blame = n->second.suspect;
      failOp(op, n->second.code, n->second.text);
      return;
    }
  }
  if (p.posted.count(key) != 0) {
    failOp(op, ErrorCode::kInternal, strCat("two receives posted for message ", op.key, "/", op.step));
    return;
  }
  op.posted = true;
  p.posted.emplace(key, &op);
  bindReceive(op);
  if (op.state.load(std::memory_order_relaxed) == MeshOp::kPending && !p.lost.empty()) {
    failOp(op, ErrorCode::kPeerLost, p.lost);
  }
}

void TcpMesh::wait(std::span<MeshOp* const> ops, const ErrorContext& context, const transport::WaitPolicy& policy) {
  transport::WaitPolicy mine = policy;
  MeshOp* awaited = nullptr;
  mine.onTimeout = [&] {
    ErrorContext ctx = context;
    ctx.peer = awaited ? awaited->peer : -1;
    const bool sending = awaited && awaited->dir == MeshOp::Dir::kSend;
    fail(ErrorCode::kTimeout, ctx, "peer ", ctx.peer, sending ? " did not take" : " did not send", " message ",
         awaited ? awaited->step : 0, " of this call within the timeout (BRAID_TIMEOUT or the call's); it may be in ",
         "another call or stuck");
  };
  auto cancelAll = [&] { cancel(ops); };
  // While it spins, the caller reads its sockets itself: a message that arrives then costs no wake-up of the
  // progress thread and of the caller (each ~5-20 us), which is most of a small collective's time over TCP.
  // Afterwards it sleeps, and the progress thread does the work.
  using Clock = std::chrono::steady_clock;
  const auto spinUntil = Clock::now() + std::chrono::microseconds(policy.spinMicros);
  bool spinning = policy.spinMicros > 0;
  std::optional<Deadline> localDeadline;
  std::optional<Deadline>& deadline = policy.deadline ? *policy.deadline : localDeadline;
  callerBlocked_.store(true, std::memory_order_seq_cst);
  struct Unblock {
    std::atomic<bool>& flag;
    ~Unblock() { flag.store(false, std::memory_order_relaxed); }
  } unblock{callerBlocked_};
  for (;;) {
    const std::uint32_t seen = completions_.value.load(std::memory_order_acquire);
    MeshOp* failed = nullptr;
    awaited = nullptr;
    for (MeshOp* op : ops) {
      const int state = op->state.load(std::memory_order_acquire);
      if (state == MeshOp::kFailed) {
        failed = op;
        break;
      }
      if (state == MeshOp::kPending && !awaited) awaited = op;
    }
    if (failed) {
      cancelAll();
      ErrorContext ctx = context;
      ctx.peer = failed->blame >= 0 ? failed->blame : failed->peer;
      throw Error(failed->code, failed->error, ctx);
    }
    if (!awaited) return;
    if (spinning) {
      try {
        if (policy.check) policy.check();
      } catch (...) {
        cancelAll();
        throw;
      }
      pollNow();
      if (policy.yieldWhileSpinning) transport::yieldCore();
      spinning = Clock::now() < spinUntil;
      continue;
    }
    // Asleep: in epoll_wait on this caller's own set (its sockets and the completion eventfd), a slice at a time,
    // handling what arrives itself.
    try {
      if (policy.check) policy.check();
      if (!deadline) deadline = Deadline::after(policy.timeoutSeconds);
      if (deadline->expired()) mine.onTimeout();
      blockOnce(std::min(kSleepSliceMs, static_cast<int>(std::ceil(deadline->secondsLeft() * 1000))));
    } catch (...) {
      cancelAll();
      throw;
    }
  }
}

void TcpMesh::blockOnce(int timeoutMs) {
  epoll_event events[64];
  const int n = ::epoll_wait(waitEpollFd_, events, 64, timeoutMs);
  if (n <= 0) return;
  std::lock_guard lock(mu_);
  tCallerHandling = true;
  handleEvents(events, n);
  tCallerHandling = false;
}

void TcpMesh::cancel(std::span<MeshOp* const> ops) {
  std::lock_guard lock(mu_);
  for (MeshOp* op : ops) {
    if (op->state.load(std::memory_order_acquire) == MeshOp::kPending) cancel(*op);
  }
}

void TcpMesh::notifyFailure(std::int64_t seq, ErrorCode code, const std::string& text, int suspect) {
  std::lock_guard lock(mu_);
  const std::string clipped = text.substr(0, kMaxNoticeBytes);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || !peer(p).lost.empty()) continue;
    FrameHeader h;
    h.kind = FrameKind::kNotice;
    h.key = seq;
    h.reason = static_cast<std::uint32_t>(code);
    h.step = static_cast<std::uint32_t>(suspect + 1);  // 0: nobody in particular
    h.messageBytes = clipped.size();
    h.length = static_cast<std::uint32_t>(clipped.size());
    OutFrame f{encodeFrame(h)};
    f.owned.assign(reinterpret_cast<const std::byte*>(clipped.data()),
                   reinterpret_cast<const std::byte*>(clipped.data()) + clipped.size());
    f.data = f.owned.data();
    f.length = h.length;
    queueFrame(*peer(p).streams.front(), std::move(f));
  }
}

void TcpMesh::abort() {
  std::lock_guard lock(mu_);
  if (aborted_) return;
  aborted_ = true;
  // A notice for call -1 means "every call": the peers drop this rank as lost.
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || !peer(p).lost.empty()) continue;
    FrameHeader h;
    h.kind = FrameKind::kNotice;
    h.key = kEveryCall;
    h.reason = static_cast<std::uint32_t>(ErrorCode::kAborted);
    for (Stream* s : peer(p).streams) {
      if (s->broken) continue;
      queueFrame(*s, OutFrame{encodeFrame(h)});
      break;
    }
  }
  for (auto& pe : peers_) {
    std::vector<MeshOp*> ops;
    for (auto& [key, op] : pe->posted) ops.push_back(op);
    for (auto* s : pe->streams) {
      for (auto& f : s->out) {
        if (f.op) ops.push_back(f.op);
      }
    }
    for (MeshOp* op : ops) failOp(*op, ErrorCode::kAborted, "the communicator was aborted on this rank");
  }
}

void TcpMesh::beginCall(const transport::CallDescriptor& call) {
  std::lock_guard lock(mu_);
  current_ = call;
  for (int p = 0; p < size_; ++p) {
    for (const auto& [key, st] : peer(p).stash) {
      if (key.kind == FrameKind::kCollective && key.key == call.seq && !(st->call == call)) {
        callMismatch(p, st->call);
        return;
      }
    }
  }
}

void TcpMesh::callMismatch(int p, const transport::CallDescriptor& theirs) {
  if (notices_.count(current_->seq) != 0) return;  // the first word on this call stands
  const auto say = [this](const transport::CallDescriptor& d) {
    return options_.describe ? options_.describe(d) : strCat("call #", d.seq);
  };
  applyNotice(current_->seq,
              Notice{p, p, ErrorCode::kMismatch,
                     strCat("this rank called ", say(*current_), " but peer ", p, " called ", say(theirs))});
}

void TcpMesh::finishCall(std::int64_t seq) {
  std::lock_guard lock(mu_);
  current_.reset();
  floor_ = std::max(floor_, seq + 1);
  notices_.erase(notices_.begin(), notices_.lower_bound(floor_));
  for (auto& p : peers_) {
    for (auto it = p->stash.begin(); it != p->stash.end();) {
      Stash& st = *it->second;
      if (st.key.kind == FrameKind::kCollective && st.key.key < floor_) {
        if (st.inFlight > 0) {
          st.dead = true;  // the streams filling it drop it when their frames end
          st.op = nullptr;
          ++it;
        } else {
          it = p->stash.erase(it);
        }
      } else {
        ++it;
      }
    }
  }
}

// ---- under mu_ ----

void TcpMesh::queueFrame(Stream& s, OutFrame frame) {
  if (s.broken) {
    if (frame.op) failOp(*frame.op, ErrorCode::kPeerLost, peer(s.peer).lost);
    return;
  }
  s.out.push_back(std::move(frame));
  if (s.out.size() == 1 && !flush(s)) endStream(s, strCat("sending failed: ", std::strerror(errno)));
}

bool TcpMesh::flush(Stream& s) {
  while (!s.out.empty()) {
    OutFrame& f = s.out.front();
    iovec iov[2];
    int n = 0;
    if (s.sent < kFrameHeaderBytes) {
      iov[n++] = {f.header.data() + s.sent, kFrameHeaderBytes - s.sent};
      if (f.length > 0) iov[n++] = {const_cast<std::byte*>(f.data), f.length};
    } else {
      const std::size_t at = s.sent - kFrameHeaderBytes;
      iov[n++] = {const_cast<std::byte*>(f.data) + at, f.length - at};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(n);
    const ssize_t wrote = ::sendmsg(s.socket.fd(), &msg, MSG_NOSIGNAL);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      if (isWouldBlock(errno)) {
        setWriteInterest(s, true);
        return true;
      }
      return false;
    }
    s.sent += static_cast<std::size_t>(wrote);
    peer(s.peer).lastSent = std::chrono::steady_clock::now();
    if (s.sent < kFrameHeaderBytes + f.length) continue;
    MeshOp* op = f.op;
    s.out.pop_front();
    s.sent = 0;
    if (op && --op->framesLeft == 0) complete(*op);
  }
  setWriteInterest(s, false);
  return true;
}

void TcpMesh::setWriteInterest(Stream& s, bool on) {
  if (s.writeInterest == on || s.broken) return;
  epoll_event ev{};
  ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
  ev.data.u64 = s.index;
  ::epoll_ctl(epollFd_, EPOLL_CTL_MOD, s.socket.fd(), &ev);
  ::epoll_ctl(waitEpollFd_, EPOLL_CTL_MOD, s.socket.fd(), &ev);
  s.writeInterest = on;
}

bool TcpMesh::readSome(Stream& s) {
  static thread_local std::vector<std::byte> discard(kDiscardBytes);
  std::size_t budget = kReadBudget;
  while (budget > 0 && !s.broken) {
    std::size_t got = 0;
    try {
      if (!s.inPayload) {
        got = s.socket.recvSome(std::span(s.inHeader).subspan(s.headerDone));
        if (got == 0) return true;
        peer(s.peer).lastHeard = std::chrono::steady_clock::now();
        s.headerDone += got;
        if (s.headerDone < kFrameHeaderBytes) continue;
        s.headerDone = 0;
        std::string why;
        if (!decodeFrame(s.inHeader, &s.frame, &why)) {
          failPeer(s.peer, strCat("stream from peer ", s.peer, " (", s.socket.peer(), ") is out of step: ", why));
          return false;
        }
        onHeader(s);
        continue;
      }
      const std::size_t left = s.frame.length - s.payloadDone;
      std::span<std::byte> into = s.target ? std::span(s.target + s.payloadDone, left)
                                           : std::span(discard.data(), std::min(left, discard.size()));
      got = s.socket.recvSome(into);
      if (got == 0) return true;
      peer(s.peer).lastHeard = std::chrono::steady_clock::now();
      s.payloadDone += got;
      if (s.payloadDone == s.frame.length) onPayloadDone(s);
    } catch (const Error& e) {
      endStream(s, e.message());
      return false;
    }
    budget -= std::min(budget, got);
  }
  return true;
}

bool TcpMesh::mismatched(MeshOp& op, const FrameHeader& h) {
  if (op.kind == FrameKind::kCollective && !(op.call == h.call)) {
    const auto say = [this](const transport::CallDescriptor& d) {
      return options_.describe ? options_.describe(d) : strCat("call #", d.seq);
    };
    failOp(op, ErrorCode::kMismatch,
           strCat("this rank called ", say(op.call), " but peer ", op.peer, " called ", say(h.call)));
    return true;
  }
  if (h.messageBytes != op.bytes) {
    failOp(op, ErrorCode::kMismatch,
           op.kind == FrameKind::kPointToPoint
               ? strCat("peer ", op.peer, " sent ", h.messageBytes, " bytes with tag ", op.key,
                        " but this rank receives ", op.bytes, " bytes")
               : strCat("peer ", op.peer, " sent ", h.messageBytes, " bytes as message ", op.step, " of ", op.key,
                        " but this rank expects ", op.bytes, " bytes"));
    return true;
  }
  return false;
}

void TcpMesh::onHeader(Stream& s) {
  const FrameHeader& h = s.frame;
  s.payloadDone = 0;
  s.target = nullptr;
  s.op = nullptr;
  s.stash = nullptr;
  s.chunk = nullptr;
  Peer& p = peer(s.peer);
  switch (h.kind) {
    case FrameKind::kHeartbeat:
      return;
    case FrameKind::kGoodbye:
      p.saidGoodbye = true;
      return;
    case FrameKind::kNotice:
      s.noticeText.resize(h.length);
      s.target = s.noticeText.data();
      break;
    case FrameKind::kCollective:
    case FrameKind::kPointToPoint: {
      if (h.kind == FrameKind::kCollective && h.key < floor_) break;  // a finished (failed) call's: dropped
      const MatchKey key{h.kind, h.key, h.step};
      if (auto it = p.posted.find(key); it != p.posted.end()) {
        MeshOp& op = *it->second;
        if (!mismatched(op, h)) {
          s.op = &op;
          s.target = op.data + h.offset;
        }
        break;
      }
      if (h.kind == FrameKind::kCollective && current_ && h.key == current_->seq && !(h.call == *current_)) {
        callMismatch(s.peer, h.call);
      }
      auto& slot = p.stash[key];
      if (!slot) {
        slot = std::make_unique<Stash>();
        slot->key = key;
        slot->call = h.call;
        slot->messageBytes = h.messageBytes;
      }
      if (slot->dead) break;
      slot->chunks.push_back({h.offset, std::vector<std::byte>(h.length), false});
      ++slot->inFlight;
      s.stash = slot.get();
      s.chunk = &slot->chunks.back();
      s.target = s.chunk->data.data();
      break;
    }
  }
  s.inPayload = true;
  if (h.length == 0) onPayloadDone(s);
}

void TcpMesh::onPayloadDone(Stream& s) {
  s.inPayload = false;
  const FrameHeader& h = s.frame;
  if (h.kind == FrameKind::kNotice) {
    const int suspect =
        h.step > 0 && h.step <= static_cast<std::uint32_t>(size_) ? static_cast<int>(h.step) - 1 : s.peer;
    if (h.key != kEveryCall) {
      Peer& from = peer(s.peer);
      from.lastFailure.assign(reinterpret_cast<const char*>(s.noticeText.data()), s.noticeText.size());
      from.lastSuspect = suspect;
    }
    applyNotice(h.key, Notice{s.peer, suspect, static_cast<ErrorCode>(h.reason),
                              std::string(reinterpret_cast<const char*>(s.noticeText.data()), s.noticeText.size())});
    return;
  }
  if (s.op) {
    MeshOp& op = *s.op;
    s.op = nullptr;
    op.done += h.length;
    if (op.done == op.bytes) complete(op);
    return;
  }
  if (!s.stash) return;
  Stash& st = *s.stash;
  Stash::Chunk& chunk = *s.chunk;
  s.stash = nullptr;
  s.chunk = nullptr;
  chunk.complete = true;
  --st.inFlight;
  if (st.op && !st.dead) {
    MeshOp& op = *st.op;
    if (!chunk.data.empty()) std::memcpy(op.data + chunk.offset, chunk.data.data(), chunk.data.size());
    op.done += chunk.data.size();
    chunk.data = {};
    if (st.inFlight == 0) st.dead = true;  // everything it held went to op; later frames go to op directly
    if (op.done == op.bytes) complete(op);
  }
  if (st.dead && st.inFlight == 0) peer(s.peer).stash.erase(st.key);  // last use of st
}

void TcpMesh::bindReceive(MeshOp& op) {
  Peer& p = peer(op.peer);
  const auto it = p.stash.find(MatchKey{op.kind, op.key, op.step});
  if (it == p.stash.end() || it->second->dead) return;
  Stash& st = *it->second;
  FrameHeader h;
  h.call = st.call;
  h.messageBytes = st.messageBytes;
  if (mismatched(op, h)) {
    st.dead = true;
    if (st.inFlight == 0) p.stash.erase(it);
    return;
  }
  for (auto& chunk : st.chunks) {
    if (!chunk.complete) continue;
    if (!chunk.data.empty()) std::memcpy(op.data + chunk.offset, chunk.data.data(), chunk.data.size());
    op.done += chunk.data.size();
    chunk.data = {};
  }
  const bool zeroByteMessageArrived = op.bytes == 0 && st.inFlight == 0;
  if (st.inFlight == 0) {
    p.stash.erase(it);
  } else {
    st.op = &op;
  }
  if (op.done == op.bytes && (op.bytes > 0 || zeroByteMessageArrived)) complete(op);
}

void TcpMesh::signalCompletion() {
  transport::bump(completions_);
  // A caller blocked in epoll_wait on its own set is woken through the eventfd (the flag is set before it looks
  // at its ops, so a completion it did not see is always signalled).
  if (!tCallerHandling && callerBlocked_.load(std::memory_order_seq_cst)) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto ignored = ::write(completionFd_, &one, sizeof one);
  }
}

void TcpMesh::complete(MeshOp& op) {
  if (op.state.load(std::memory_order_relaxed) != MeshOp::kPending) return;
  if (op.posted) {
    peer(op.peer).posted.erase(MatchKey{op.kind, op.key, op.step});
    op.posted = false;
  }
  op.state.store(MeshOp::kDone, std::memory_order_release);
  signalCompletion();
}

void TcpMesh::failOp(MeshOp& op, ErrorCode code, std::string text) {
  if (op.state.load(std::memory_order_relaxed) != MeshOp::kPending) return;
  if (op.posted) {
    peer(op.peer).posted.erase(MatchKey{op.kind, op.key, op.step});
    op.posted = false;
  }
  for (Stream* s : peer(op.peer).streams) {
    if (s->op == &op) {  // the rest of the frame it was reading is dropped
      s->op = nullptr;
      s->target = nullptr;
    }
  }
  for (auto& [key, st] : peer(op.peer).stash) {
    if (st->op == &op) {
      st->op = nullptr;
      st->dead = true;
    }
  }
  op.code = code;
  op.error = std::move(text);
  op.state.store(MeshOp::kFailed, std::memory_order_release);
  signalCompletion();
}

void TcpMesh::cancel(MeshOp& op) {
  if (op.dir == MeshOp::Dir::kSend) {
    // Frames not started are dropped; a frame half written must still be finished (the stream would be out of
    // step otherwise), from a copy since the caller's buffer is about to go away.
    for (Stream* s : peer(op.peer).streams) {
      for (auto it = s->out.begin(); it != s->out.end();) {
        if (it->op != &op) {
          ++it;
        } else if (it == s->out.begin() && s->sent > 0) {
          it->owned.assign(it->data, it->data + it->length);
          it->data = it->owned.data();
          it->op = nullptr;
          ++it;
        } else {
          it = s->out.erase(it);
        }
      }
    }
  }
  failOp(op, ErrorCode::kInternal, "cancelled");
}

void TcpMesh::applyNotice(std::int64_t seq, const Notice& notice) {
  if (seq == kEveryCall) {  // the peer aborted: it takes part in nothing any more
    failPeer(notice.peer, strCat("peer ", notice.peer, " aborted its communicator"));
    return;
  }
  if (seq < floor_) return;  // about a call this rank has finished
  notices_.try_emplace(seq, notice);
  for (auto& p : peers_) {
    std::vector<MeshOp*> hit;
    for (auto& [key, op] : p->posted) {
      if (key.kind == FrameKind::kCollective && key.key == seq) hit.push_back(op);
    }
    for (MeshOp* op : hit) {
      op->blame = notice.suspect;
      failOp(*op, notice.code, notice.text);
    }
  }
}

void TcpMesh::endStream(Stream& s, const std::string& why) {
  if (s.broken) return;
  s.broken = true;
  ::epoll_ctl(epollFd_, EPOLL_CTL_DEL, s.socket.fd(), nullptr);
  ::epoll_ctl(waitEpollFd_, EPOLL_CTL_DEL, s.socket.fd(), nullptr);
  Peer& p = peer(s.peer);
  // A peer that failed a call and then left says why in its last notice: that is the cause worth naming.
  const std::string lost = !p.lastFailure.empty()
                               ? strCat("peer ", s.peer, " left after it failed a call: ", p.lastFailure)
                           : p.saidGoodbye ? strCat("peer ", s.peer, " destroyed its communicator")
                                           : strCat("connection to peer ", s.peer, " (", s.socket.peer(),
                                                    ") closed: its process exited or crashed (", why, ")");
  // What this stream carried is lost; the peer's other streams may still hold frames it sent before it left
  // (streams end in no particular order), so the peer is lost only once every stream has ended.
  std::vector<MeshOp*> broken;
  for (auto& f : s.out) {
    if (f.op) broken.push_back(f.op);
  }
  s.out.clear();
  s.sent = 0;
  if (s.inPayload && s.op) broken.push_back(s.op);
  if (s.inPayload && s.stash) {
    --s.stash->inFlight;
    s.stash->dead = true;
    if (s.stash->op) broken.push_back(s.stash->op);
  }
  s.op = nullptr;
  s.stash = nullptr;
  s.chunk = nullptr;
  s.target = nullptr;
  s.inPayload = false;
  for (MeshOp* op : broken) failOp(*op, ErrorCode::kPeerLost, lost);
  if (--p.liveStreams == 0) failPeer(s.peer, lost);
}

void TcpMesh::failPeer(int p, std::string why) {
  Peer& pe = peer(p);
  if (!pe.lost.empty()) return;
  pe.lost = std::move(why);
  auto lose = [&](MeshOp& op) {
    if (pe.lastSuspect >= 0) op.blame = pe.lastSuspect;
    failOp(op, ErrorCode::kPeerLost, pe.lost);
  };
  for (Stream* s : pe.streams) {
    s->broken = true;
    ::epoll_ctl(epollFd_, EPOLL_CTL_DEL, s->socket.fd(), nullptr);
    ::epoll_ctl(waitEpollFd_, EPOLL_CTL_DEL, s->socket.fd(), nullptr);
    std::vector<MeshOp*> sends;
    for (auto& f : s->out) {
      if (f.op) sends.push_back(f.op);
    }
    s->out.clear();
    s->sent = 0;
    for (MeshOp* op : sends) lose(*op);
    s->op = nullptr;
    s->target = nullptr;
  }
  std::vector<MeshOp*> receives;
  for (auto& [key, op] : pe.posted) receives.push_back(op);
  for (MeshOp* op : receives) lose(*op);
  // The stash stays: messages that arrived whole before the peer left are still good.
}

// ---- the progress thread ----

void TcpMesh::progressLoop() {
  // The progress thread only matters while no caller waits: a waiting caller reads and writes its sockets itself
  // (pollNow while it spins, blockOnce while it sleeps), so that a message costs it no hand-off between threads.
  // Meanwhile this thread stays off the sockets and the lock, rather than compete with the caller for them.
  epoll_event events[64];
  for (;;) {
    if (callerBlocked_.load(std::memory_order_acquire)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kStandAsideMs));
      std::lock_guard lock(mu_);
      if (stopping_) break;
      continue;
    }
    const int n = ::epoll_wait(epollFd_, events, 64, 1000);
    std::lock_guard lock(mu_);
    if (stopping_) break;
    handleEvents(events, n);
  }
  // Goodbyes were queued by the destructor: give them one chance to leave.
  std::lock_guard lock(mu_);
  for (auto& s : streams_) {
    if (!s->broken && !s->out.empty()) flush(*s);
  }
}

void TcpMesh::handleEvents(const epoll_event* events, int n) {
  for (int i = 0; i < n; ++i) {
    const std::uint64_t token = events[i].data.u64;
    if (token == kWakeToken) {
      std::uint64_t drained;
      [[maybe_unused]] const auto ignored = ::read(wakeFd_, &drained, sizeof drained);
      continue;
    }
    if (token == kCompletionToken) {
      std::uint64_t drained;
      [[maybe_unused]] const auto ignored = ::read(completionFd_, &drained, sizeof drained);
      continue;
    }
    Stream& s = *streams_[token];
    if (s.broken) continue;
    if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
      if (!readSome(s)) continue;
    }
    if ((events[i].events & EPOLLOUT) && !flush(s)) endStream(s, strCat("sending failed: ", std::strerror(errno)));
  }
}

void TcpMesh::heartbeatTick() {
  using Clock = std::chrono::steady_clock;
  std::lock_guard lock(mu_);
  if (stopping_) return;
  // Read what waits first: a starved progress thread must not make live peers look silent.
  epoll_event events[64];
  const int n = ::epoll_wait(epollFd_, events, 64, 0);
  if (n > 0) handleEvents(events, n);
  const auto now = Clock::now();
  const auto interval = std::chrono::duration<double>(options_.heartbeatInterval);
  // This process was stopped itself (or starved): its peers' silence meanwhile proves nothing, start afresh.
  const bool wePaused = lastTick_ != Clock::time_point{} && now - lastTick_ > 3 * interval;
  lastTick_ = now;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    Peer& pe = peer(p);
    if (!pe.lost.empty()) continue;
    if (wePaused) pe.lastHeard = now;
    const double silent = std::chrono::duration<double>(now - pe.lastHeard).count();
    if (options_.heartbeatTimeout > 0 && silent > options_.heartbeatTimeout) {
      failPeer(p, strCat("nothing arrived from peer ", p, " for ", static_cast<long>(silent),
                         " s, heartbeats included (BRAID_HEARTBEAT_TIMEOUT ", options_.heartbeatTimeout,
                         " s): its process is stopped, frozen, or the network to it is cut"));
      continue;
    }
    if (now - pe.lastSent < interval) continue;  // traffic already says this rank is alive
    for (Stream* s : pe.streams) {
      if (s->broken) continue;
      FrameHeader h;
      h.kind = FrameKind::kHeartbeat;
      queueFrame(*s, OutFrame{encodeFrame(h)});
      break;
    }
  }
}

void TcpMesh::pollNow() {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // the progress thread is at it
  epoll_event events[64];
  const int n = ::epoll_wait(epollFd_, events, 64, 0);
  tCallerHandling = true;
  if (n > 0) handleEvents(events, n);
  tCallerHandling = false;
}

}  // namespace braid::tcp
