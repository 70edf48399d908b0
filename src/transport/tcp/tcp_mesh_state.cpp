// TcpMesh, the bookkeeping: ops completed, failed or cancelled, notices applied, streams and peers lost.
// Everything here runs under the mesh's lock.
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

void TcpMesh::signalCompletion() {
  // A caller blocked in epoll_wait on its own set is woken through the eventfd (the flag is set before it looks
  // at its ops, so a completion it did not see is always signalled).
  if (!tCallerHandling && callerBlocked_.load(std::memory_order_seq_cst)) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto ignored = ::write(completionFd_, &one, sizeof one);
  }
}

void TcpMesh::complete(NetOp& op) {
  if (op.state.load(std::memory_order_relaxed) != NetOp::kPending) return;
  if (op.posted) {
    peer(op.peer).match.forget(op);
    updateReading(op.peer);
  }
  op.state.store(NetOp::kDone, std::memory_order_release);
  signalCompletion();
}

void TcpMesh::failOp(NetOp& op, ErrorCode code, std::string text) {
  if (op.state.load(std::memory_order_relaxed) != NetOp::kPending) return;
  const bool wasPosted = op.posted;
  peer(op.peer).match.forget(op);
  if (wasPosted) updateReading(op.peer);
  for (Stream* s : peer(op.peer).streams) {
    if (s->landing.op == &op) {  // the rest of the frame it was reading is dropped
      s->landing = {};
      s->target = nullptr;
    }
  }
  op.code = code;
  op.error = std::move(text);
  op.state.store(NetOp::kFailed, std::memory_order_release);
  signalCompletion();
}

void TcpMesh::cancel(NetOp& op) {
  if (op.dir == NetOp::Dir::kSend) {
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
  // The peer aborted: it takes part in nothing any more. Its failed call's notice (Aborted) can come before the
  // abort's own: the call fails on its thread as soon as the abort is flagged, before abort() reaches the mesh.
  if (seq == kEveryCall || notice.code == ErrorCode::kAborted) {
    failPeer(notice.peer, strCat("peer ", notice.peer, " aborted its communicator",
                                 seq == kEveryCall ? std::string() : strCat(" (", notice.text, ")")));
    return;
  }
  if (seq < floor_) return;  // about a call this rank has finished
  notices_.try_emplace(seq, notice);
  for (auto& p : peers_) {
    for (NetOp* op : p->match.postedForCall(seq)) {
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
  std::vector<NetOp*> broken;
  for (auto& f : s.out) {
    if (f.op) broken.push_back(f.op);
  }
  s.out.clear();
  s.sent = 0;
  if (s.inPayload) {
    if (NetOp* waiting = p.match.abandon(s.landing)) broken.push_back(waiting);
  }
  s.landing = {};
  s.target = nullptr;
  s.inPayload = false;
  for (NetOp* op : broken) failOp(*op, ErrorCode::kPeerLost, lost);
  if (--p.liveStreams == 0) failPeer(s.peer, lost);
}

void TcpMesh::failPeer(int p, std::string why) {
  Peer& pe = peer(p);
  if (!pe.lost.empty()) return;
  pe.lost = std::move(why);
  auto lose = [&](NetOp& op) {
    if (pe.lastSuspect >= 0) op.blame = pe.lastSuspect;
    failOp(op, ErrorCode::kPeerLost, pe.lost);
  };
  for (Stream* s : pe.streams) {
    s->broken = true;
    ::epoll_ctl(epollFd_, EPOLL_CTL_DEL, s->socket.fd(), nullptr);
    ::epoll_ctl(waitEpollFd_, EPOLL_CTL_DEL, s->socket.fd(), nullptr);
    std::vector<NetOp*> sends;
    for (auto& f : s->out) {
      if (f.op) sends.push_back(f.op);
    }
    s->out.clear();
    s->sent = 0;
    for (NetOp* op : sends) lose(*op);
    // The piece it was reading will not come: the receive waiting for it is lost below, its kept-aside message too.
    if (s->inPayload) pe.match.abandon(s->landing);
    s->inPayload = false;
    s->landing = {};
    s->target = nullptr;
  }
  for (NetOp* op : pe.match.posted()) lose(*op);
  // The stash stays: messages that arrived whole before the peer left are still good.
}

}  // namespace braid::tcp
