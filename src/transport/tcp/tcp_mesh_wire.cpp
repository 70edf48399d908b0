// TcpMesh, the wire side: frames queued and written, bytes read and placed (straight into a posted receive, or
// kept aside until one is posted). Everything here runs under the mesh's lock.
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
#include "transport/tcp/tcp_mesh_parts.hpp"

namespace braid::tcp {

using namespace mesh;

// ---- under mu_ ----

void TcpMesh::queueFrame(Stream& s, OutFrame frame) {
  if (s.broken) {
    if (frame.op) failOp(*frame.op, ErrorCode::kPeerLost, peer(s.peer).lost);
    return;
  }
  s.out.push_back(std::move(frame));
  if (s.out.size() == 1 && !flush(s)) sendFailed(s);
}

void TcpMesh::sendFailed(Stream& s) {
  const int err = errno;
  // A peer that failed a call tells everyone why and may then exit at once: its notice can still sit unread in
  // this socket when a send to it fails. Read it first, so that the error names the rank that really failed.
  if (!readSome(s) || s.broken) return;
  endStream(s, strCat("sending failed: ", std::strerror(err)));
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
    if (f.op && f.op->kind == transport::MessageKind::kPointToPoint) {
      p2pMoved_.fetch_add(static_cast<std::uint64_t>(wrote), std::memory_order_relaxed);
    }
    peer(s.peer).lastSent = std::chrono::steady_clock::now();
    if (s.sent < kFrameHeaderBytes + f.length) continue;
    NetOp* op = f.op;
    s.out.pop_front();
    s.sent = 0;
    if (op && --op->framesLeft == 0) complete(*op);
  }
  setWriteInterest(s, false);
  return true;
}

void TcpMesh::setWriteInterest(Stream& s, bool on) {
  if (s.writeInterest == on || s.broken) return;
  s.writeInterest = on;
  applyInterest(s);
}

void TcpMesh::applyInterest(Stream& s) {
  if (s.broken) return;
  epoll_event ev{};
  // Hang-ups and errors are reported whatever is asked for, so a peer that dies is seen even while not read.
  ev.events = (peer(s.peer).reading ? EPOLLIN : 0u) | (s.writeInterest ? EPOLLOUT : 0u);
  ev.data.u64 = s.index;
  ::epoll_ctl(epollFd_, EPOLL_CTL_MOD, s.socket.fd(), &ev);
  ::epoll_ctl(waitEpollFd_, EPOLL_CTL_MOD, s.socket.fd(), &ev);
}

void TcpMesh::updateReading(int p) {
  Peer& pe = peer(p);
  // Always read when a receive from the peer (or from any peer) waits: what it needs may be behind what is kept aside.
  const bool want = pe.match.keptBytes() < kStashLimitBytes || pe.match.anyPosted() || readEveryPeer_;
  if (want == pe.reading) return;
  pe.reading = want;
  for (Stream* s : pe.streams) applyInterest(*s);
}

bool TcpMesh::readSome(Stream& s) {
  static thread_local std::vector<std::byte> discard(kDiscardBytes);
  std::size_t budget = kReadBudget;
  while (budget > 0 && !s.broken) {
    if (!s.inPayload && s.headerDone == 0 && !peer(s.peer).reading) return true;  // held back: see kStashLimitBytes
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
      if (s.frame.kind == FrameKind::kPointToPoint) p2pMoved_.fetch_add(got, std::memory_order_relaxed);
      if (s.payloadDone == s.frame.length) onPayloadDone(s);
    } catch (const Error& e) {
      endStream(s, e.message());
      return false;
    }
    budget -= std::min(budget, got);
  }
  return true;
}

// A heartbeat carries the peer's progress word; a collective frame of a later call than the one known says the peer
// has begun that call. Frames of the call already known change nothing (no clock read per frame).
void TcpMesh::noteProgress(Peer& p, const FrameHeader& h) {
  std::int64_t word = 0;
  if (h.kind == FrameKind::kHeartbeat) {
    word = h.key;
  } else if (h.kind == FrameKind::kCollective &&
             h.key > transport::Progress::fromWord(p.progressWord.load(std::memory_order_relaxed)).seq) {
    word = transport::Progress{h.key, true}.word();
  } else {
    return;
  }
  p.progressWord.store(word, std::memory_order_relaxed);
  p.progressAtNs.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_release);
}

void TcpMesh::onHeader(Stream& s) {
  const FrameHeader& h = s.frame;
  s.payloadDone = 0;
  s.target = nullptr;
  s.landing = {};
  Peer& p = peer(s.peer);
  noteProgress(p, h);
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
      const transport::Piece piece{
          {static_cast<transport::MessageKind>(h.kind), h.key, h.step}, h.call, h.messageBytes, h.offset, h.length};
      s.landing = p.match.arrive(piece, *this);
      s.target = s.landing.target;
      if (s.landing.stash == nullptr) break;
      // Kept aside: a frame of this rank's current call with another descriptor fails the call now, though no
      // receive waits for it.
      if (h.kind == FrameKind::kCollective && current_ && h.key == current_->seq && !(h.call == *current_)) {
        callMismatch(s.peer, h.call);
      }
      updateReading(s.peer);
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
    // What the peer leaves over: a failure that broke its communicator, not a mismatch, which every rank fails alike
    // and goes on from. A failure blamed on this rank is named as the peer's own, as below.
    if (h.key != kEveryCall && static_cast<ErrorCode>(h.reason) != ErrorCode::kMismatch) {
      Peer& from = peer(s.peer);
      from.lastFailure.assign(reinterpret_cast<const char*>(s.noticeText.data()), s.noticeText.size());
      from.lastSuspect = suspect == rank_ ? s.peer : suspect;
    }
    Notice notice{s.peer, suspect, static_cast<ErrorCode>(h.reason),
                  std::string(reinterpret_cast<const char*>(s.noticeText.data()), s.noticeText.size())};
    // A peer that failed the call waiting for this very rank (it timed out before this rank arrived): here that is
    // the peer lost to the call, not a timeout on this rank itself. A mismatch stays one (every rank fails it alike),
    // named for the peer that saw it: this rank is no peer of its own.
    if (suspect == rank_) {
      notice.suspect = s.peer;
      if (notice.code != ErrorCode::kMismatch) notice.code = ErrorCode::kPeerLost;
    }
    applyNotice(h.key, notice);
    return;
  }
  const transport::PeerMatcher::Landing landing = s.landing;
  s.landing = {};
  peer(s.peer).match.landed(landing, h.length, *this);
  updateReading(s.peer);
}

}  // namespace braid::tcp
