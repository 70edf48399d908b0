// TcpMesh: construction, posting and waiting (the caller's side), notices and calls, and its two threads.
#include "transport/tcp/tcp_mesh.hpp"

#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
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
#include "base/threads.hpp"
#include "transport/tcp/tcp_mesh_parts.hpp"

namespace braid::tcp {

using namespace mesh;

thread_local bool mesh::tCallerHandling = false;

TcpMesh::TcpMesh(int rank, int size, std::vector<std::vector<Socket>> streams, MeshOptions options)
    : rank_(rank), size_(size), options_(std::move(options)) {
  // A constructor that throws runs no destructor: what it started (the progress thread: a joinable std::thread
  // destroyed would terminate the process) and opened (the descriptors) is undone here before the error goes on.
  try {
    start(std::move(streams));
  } catch (...) {
    stopProgress();
    closeDescriptors();
    throw;
  }
}

void TcpMesh::start(std::vector<std::vector<Socket>> streams) {
  const int size = size_, rank = rank_;
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
    peers_.push_back(std::make_unique<Peer>(p, &options_.describe));
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
  progress_ = startThread("the TCP mesh's progress thread", [this] { progressLoop(); });
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
  stopProgress();
  closeGracefully();
  closeDescriptors();
}

void TcpMesh::stopProgress() {
  if (!progress_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto ignored = ::write(wakeFd_, &one, sizeof one);
  progress_.join();
}

void TcpMesh::closeDescriptors() {
  for (int* fd : {&epollFd_, &wakeFd_, &waitEpollFd_, &completionFd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

// A rank that leaves first must not take its last messages with it. A send completed once its bytes were in the
// kernel, and a socket closed while unread bytes wait in it (a peer's heartbeat, its goodbye) sends a reset, which
// throws away what the kernel has not yet delivered: a peer still in the last call would lose its last message and
// fail. So: the goodbyes go out, then a FIN after them (shutdown), then this waits until the peers' kernels
// acknowledged every byte (SIOCOUTQ is 0), reading and dropping what still arrives, for at most kLingerSeconds (a
// peer that stopped reading is not waited for longer); only then do the sockets close. An aborted mesh leaves at once.
void TcpMesh::closeGracefully() {
  std::lock_guard lock(mu_);
  if (aborted_) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kLingerSeconds);
  std::vector<Stream*> open;
  for (auto& s : streams_) {
    if (!s->broken && s->socket.valid()) open.push_back(s.get());
  }
  std::vector<bool> finSent(open.size(), false);
  std::byte sink[4096];
  for (;;) {
    bool waiting = false;
    for (std::size_t i = 0; i < open.size(); ++i) {
      Stream& s = *open[i];
      const int fd = s.socket.fd();
      for (;;) {  // drop what arrived: no unread byte may be left when the socket closes
        const ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n <= 0) break;
      }
      if (s.broken) continue;
      if (!s.out.empty() && !flush(s)) s.broken = true;  // a goodbye the last round could not write
      if (s.broken || !s.out.empty()) {
        waiting = waiting || !s.broken;
        continue;
      }
      if (!finSent[i]) {
        ::shutdown(fd, SHUT_WR);
        finSent[i] = true;
      }
      int unacknowledged = 0;
      if (::ioctl(fd, SIOCOUTQ, &unacknowledged) == 0 && unacknowledged > 0) waiting = true;
    }
    if (!waiting || std::chrono::steady_clock::now() >= until) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string TcpMesh::peerFailure(int p) {
  std::lock_guard lock(mu_);
  return peer(p).lost;
}

bool TcpMesh::peerLeft(int p) {
  std::lock_guard lock(mu_);
  const Peer& gone = peer(p);
  return !gone.lost.empty() && gone.saidGoodbye && gone.lastFailure.empty();
}

void TcpMesh::readEveryPeer(bool on) {
  std::lock_guard lock(mu_);
  if (readEveryPeer_ == on) return;
  readEveryPeer_ = on;
  for (int p = 0; p < size_; ++p) {
    if (p != rank_) updateReading(p);
  }
}

bool TcpMesh::arrived(int p, transport::MessageKind kind, std::int64_t key, std::uint32_t step) {
  std::lock_guard lock(mu_);
  return peer(p).match.kept(transport::MessageName{kind, key, step});
}

std::vector<transport::PeerProgress> TcpMesh::peerProgress() const {
  std::vector<transport::PeerProgress> out;
  const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    const Peer& pe = *peers_[static_cast<std::size_t>(p)];
    const std::int64_t at = pe.progressAtNs.load(std::memory_order_acquire);
    out.push_back(
        transport::PeerProgress{p, transport::Progress::fromWord(pe.progressWord.load(std::memory_order_relaxed)),
                                at == 0 ? -1.0 : static_cast<double>(now - at) * 1e-9});
  }
  return out;
}

// ---- posting and waiting (caller thread) ----

void TcpMesh::post(NetOp& op) {
  if (op.peer < 0 || op.peer >= size_ || op.peer == rank_) {
    fail(ErrorCode::kInternal, {}, "mesh op addressed to peer ", op.peer, " of ", size_, " from rank ", rank_);
  }
  postedBytes_.fetch_add(op.bytes, std::memory_order_relaxed);
  if (op.region != nullptr) postedRegisteredBytes_.fetch_add(op.bytes, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  op.state.store(NetOp::kPending, std::memory_order_relaxed);
  op.done = 0;
  op.error.clear();
  op.blame = -1;
  if (aborted_) {
    failOp(op, ErrorCode::kAborted, "the communicator was aborted on this rank");
    return;
  }
  Peer& p = peer(op.peer);
  if (op.dir == NetOp::Dir::kSend) {
    if (!p.lost.empty()) {
      failOp(op, ErrorCode::kPeerLost, p.lost);
      return;
    }
    const std::size_t frames = op.bytes == 0 ? 1 : (op.bytes - 1) / kMaxFramePayload + 1;
    op.framesLeft = static_cast<std::uint32_t>(frames);
    for (std::size_t i = 0; i < frames; ++i) {
      FrameHeader h;
      h.kind = frameKindOf(op.kind);
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
      if (op.state.load(std::memory_order_relaxed) != NetOp::kPending) return;  // the stream broke
    }
    return;
  }
  // A peer's notice explains more than its absence (it names the cause), so it is looked at first; a message
  // that arrived in full before its sender left is still good.
  if (op.kind == transport::MessageKind::kCollective) {
    if (auto n = notices_.find(op.key); n != notices_.end()) {
      op.blame = n->second.suspect;
      failOp(op, n->second.code, n->second.text);
      return;
    }
  }
  p.match.post(op, *this);
  updateReading(op.peer);
  if (op.state.load(std::memory_order_relaxed) == NetOp::kPending && !p.lost.empty()) {
    failOp(op, ErrorCode::kPeerLost, p.lost);
  }
}

void TcpMesh::wait(std::span<NetOp* const> ops, const CallContext& context, const transport::WaitPolicy& policy) {
  waitFor(ops, context, policy, nullptr);
}

void TcpMesh::waitAny(std::span<NetOp* const> ops, const std::function<bool()>& interrupted, const CallContext& context,
                      const transport::WaitPolicy& policy) {
  waitFor(ops, context, policy, &interrupted);
}

void TcpMesh::wakeWaiter() {
  if (callerBlocked_.load(std::memory_order_seq_cst)) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto ignored = ::write(completionFd_, &one, sizeof one);
  }
}

void TcpMesh::waitFor(std::span<NetOp* const> ops, const CallContext& context, const transport::WaitPolicy& policy,
                      const std::function<bool()>* interrupted) {
  transport::WaitPolicy mine = policy;
  NetOp* awaited = nullptr;
  const auto failTimedOut = [&] {
    ErrorContext ctx = context;
    if (!awaited) fail(ErrorCode::kTimeout, ctx, "nothing this call waits for arrived within the timeout");
    ctx.peer = awaited->peer;
    const bool sending = awaited->dir == NetOp::Dir::kSend;
    fail(ErrorCode::kTimeout, ctx, "peer ", ctx.peer, sending ? " did not take" : " did not send", " message ",
         awaited->step, " of this call within the timeout (BRAID_TIMEOUT or the call's); it may be in ",
         "another call or stuck");
  };
  mine.onTimeout = failTimedOut;
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
    NetOp* failed = nullptr;
    awaited = nullptr;
    bool anyDone = false;
    for (NetOp* op : ops) {
      const int state = op->state.load(std::memory_order_acquire);
      if (state == NetOp::kFailed) {
        failed = op;
        break;
      }
      if (state == NetOp::kPending && !awaited) awaited = op;
      anyDone |= state == NetOp::kDone;
    }
    if (failed) {
      cancelAll();
      ErrorContext ctx = context;
      ctx.peer = failed->blame >= 0 ? failed->blame : failed->peer;
      throw Error(failed->code, failed->error, ctx);
    }
    // With no op, waitAny waits for `interrupted` alone (a receive from any source waiting for its peer to be known).
    if (!awaited && !(interrupted && ops.empty())) return;
    if (interrupted && (anyDone || (*interrupted)())) return;
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
      // In double first: a deadline far off (a fed point-to-point group's is never) is more milliseconds than an int.
      const double leftMs = std::ceil(deadline->secondsLeft() * 1000);
      blockOnce(leftMs < kSleepSliceMs ? static_cast<int>(leftMs) : kSleepSliceMs);
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

void TcpMesh::cancel(std::span<NetOp* const> ops) {
  std::lock_guard lock(mu_);
  for (NetOp* op : ops) {
    if (op->state.load(std::memory_order_acquire) == NetOp::kPending) cancel(*op);
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
    std::vector<NetOp*> ops = pe->match.posted();
    for (auto* s : pe->streams) {
      for (auto& f : s->out) {
        if (f.op) ops.push_back(f.op);
      }
    }
    for (NetOp* op : ops) failOp(*op, ErrorCode::kAborted, "the communicator was aborted on this rank");
  }
}

void TcpMesh::beginCall(const transport::CallDescriptor& call) {
  std::lock_guard lock(mu_);
  current_ = call;
  for (int p = 0; p < size_; ++p) {
    if (const auto theirs = peer(p).match.keptForOtherCall(call)) {
      callMismatch(p, *theirs);
      return;
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
  for (int r = 0; r < size_; ++r) {
    peers_[static_cast<std::size_t>(r)]->match.dropCallsBefore(floor_);
    if (r != rank_) updateReading(r);
  }
}

std::size_t TcpMesh::stashedBytes(int p) {
  std::lock_guard lock(mu_);
  return peer(p).match.keptBytes();
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
    if ((events[i].events & EPOLLOUT) && !flush(s)) sendFailed(s);
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
    if (wePaused || !pe.reading) pe.lastHeard = now;  // a peer held back (kStashLimitBytes) is busy sending
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
      h.key = myProgress_.load(std::memory_order_relaxed);
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
