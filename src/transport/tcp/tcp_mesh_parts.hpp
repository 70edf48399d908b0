// The TcpMesh's private parts, shared by its translation units (tcp_mesh.cpp: posting, waiting and the threads;
// tcp_mesh_wire.cpp: frames in and out of the sockets; tcp_mesh_state.cpp: completing and failing ops and peers).
// Matching messages to receives is transport::PeerMatcher's, one per peer.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/peer_matcher.hpp"
#include "transport/tcp/tcp_mesh.hpp"

namespace braid::tcp {

namespace mesh {

inline constexpr std::uint64_t kWakeToken = ~std::uint64_t{0};
inline constexpr std::uint64_t kCompletionToken = ~std::uint64_t{0} - 1;
// Bytes one stream may read per readiness event before the loop turns to the others: one busy stream must not
// hold the lock (and the caller posting the next message) for long.
inline constexpr std::size_t kReadBudget = std::size_t{4} << 20;
inline constexpr std::size_t kDiscardBytes = 64 << 10;
// How often the progress thread looks whether the caller that keeps it off the sockets has left.
inline constexpr int kStandAsideMs = 2;
// How long a mesh being destroyed waits for its peers to acknowledge what it sent (TcpMesh::closeGracefully):
// milliseconds normally; the bound is for a peer that stopped reading.
inline constexpr double kLingerSeconds = 2.0;
// A blocked caller wakes at least this often to run its checks (abort, deadline).
inline constexpr int kSleepSliceMs = 20;
// Bytes a rank keeps aside for one peer (messages that arrived before their receive was posted) before it stops
// reading that peer's sockets, so that a peer running calls ahead (a broadcast root) is held back by TCP's own
// flow control instead of filling this rank's memory. 64 MiB: several large ring segments' worth, far more than
// ranks in step ever hold.
inline constexpr std::size_t kStashLimitBytes = std::size_t{64} << 20;
// The call a notice names when it is about every call (an abort).
inline constexpr std::int64_t kEveryCall = -1;

// Set while a waiting caller handles events itself: what it completes it sees without being signalled.
extern thread_local bool tCallerHandling;

inline bool isWouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace mesh

struct TcpMesh::OutFrame {
  OutFrame() = default;
  explicit OutFrame(const EncodedHeader& h, const std::byte* d = nullptr, std::uint32_t len = 0, NetOp* o = nullptr)
      : header(h), data(d), length(len), op(o) {}
  EncodedHeader header{};
  const std::byte* data = nullptr;
  std::uint32_t length = 0;
  NetOp* op = nullptr;           // the send this frame belongs to; null for control frames and cancelled sends
  std::vector<std::byte> owned;  // notice text, or a cancelled send's payload copied out of the caller's buffer
};

struct TcpMesh::Stream {
  Socket socket;
  int peer = -1;
  std::size_t index = 0;  // in streams_, the epoll token
  std::deque<OutFrame> out;
  std::size_t sent = 0;  // bytes of out.front() (header, then payload) already written
  bool writeInterest = false;
  bool broken = false;
  // Receiving: a header, then its payload into `target` (null: dropped): a notice's text, or where the matcher
  // landed a message's piece (`landing`).
  EncodedHeader inHeader{};
  std::size_t headerDone = 0;
  bool inPayload = false;
  FrameHeader frame;
  std::size_t payloadDone = 0;
  std::byte* target = nullptr;
  transport::PeerMatcher::Landing landing;
  std::vector<std::byte> noticeText;
};

struct TcpMesh::Peer {
  Peer(int index, const std::function<std::string(const transport::CallDescriptor&)>* describe)
      : match(index, describe) {}
  std::vector<Stream*> streams;
  std::chrono::steady_clock::time_point lastHeard = std::chrono::steady_clock::now();  // any byte from the peer
  std::chrono::steady_clock::time_point lastSent = std::chrono::steady_clock::now();   // any byte to it
  unsigned nextStream = 0;
  std::string lost;  // why the peer is gone; "" while connected
  bool saidGoodbye = false;
  int liveStreams = 0;
  std::string lastFailure;       // the text of the last notice it sent, whatever call it named
  int lastSuspect = -1;          // and the peer that notice blamed
  transport::PeerMatcher match;  // its messages and the receives posted for them
  bool reading = true;           // its streams are polled for input (see kStashLimitBytes)
  // Its progress (transport/progress.hpp) as its heartbeats and collective frames told it, and when (steady-clock
  // nanoseconds; 0: never): written under the lock, read without it for flight records.
  std::atomic<std::int64_t> progressWord{0};
  std::atomic<std::int64_t> progressAtNs{0};
};

}  // namespace braid::tcp
