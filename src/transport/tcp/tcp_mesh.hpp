// The TCP transport (transport::NetTransport): every pair of ranks joined by `streams` authenticated connections.
// Algorithms post messages (transport::NetOp) and wait for them; they never see a socket.
//
// Matching. A message travels as frames of at most kMaxFramePayload bytes that may take different streams of the
// pair in any order; the receiver puts each frame at its offset within the message its header names. A frame is read
// straight into the receive's buffer when the receive is posted first, else kept aside ("stashed") until it is. At
// most kStashLimitBytes are kept aside per peer; past that the peer is not read (TCP holds it back) until a receive
// from it, or from any source, is posted.
//
// Checks. Every collective frame carries its call's descriptor; one that differs from this rank's call (posted for
// or not) fails the call with Mismatch naming both sides, and its bytes are dropped.
//
// Failures. A peer is lost when all its streams have ended, when one is out of step, or when nothing (heartbeats
// included) came from it for the heartbeat timeout. A failure notice is a frame for that call's sequence number.
// Frames of a call that this rank has finished (finishCall) are dropped on arrival: they belong to a call that failed.
//
// Threads. A waiting caller serves the sockets itself: it polls while it spins, then sleeps in epoll on its own set.
// The progress thread serves them only while no caller waits, and a ticker sends heartbeats and checks the peers'
// silence. All of them touch shared state under the mesh's lock, except the ops' atomic states.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "braid/types.hpp"
#include "transport/net_transport.hpp"
#include "transport/peer_matcher.hpp"
#include "transport/progress.hpp"
#include "transport/region.hpp"
#include "transport/tcp/frame.hpp"
#include "transport/tcp/socket.hpp"
#include "transport/ticker.hpp"
#include "transport/wait.hpp"

namespace braid::tcp {

using transport::NetOp;

/// The frame kind that carries messages of `kind`: the values agree.
constexpr FrameKind frameKindOf(transport::MessageKind kind) { return static_cast<FrameKind>(kind); }
static_assert(frameKindOf(transport::MessageKind::kCollective) == FrameKind::kCollective);
static_assert(frameKindOf(transport::MessageKind::kPointToPoint) == FrameKind::kPointToPoint);
// A segment of the network algorithms travels as one frame.
static_assert(transport::kNetSegmentBytes <= kMaxFramePayload);

struct MeshOptions {
  int streams = 2;
  std::size_t socketBufferBytes = 0;  // SO_SNDBUF/SO_RCVBUF; 0 leaves the kernel's autotuning
  /// Heartbeats: a peer that sent nothing for `heartbeatInterval` s gets a heartbeat frame; one from which
  /// nothing arrived for `heartbeatTimeout` s is lost (0 turns either off).
  double heartbeatInterval = 0;
  double heartbeatTimeout = 0;
  /// Turns a call descriptor into words for Mismatch messages ("allreduce #3 (float32, count 100, sum)").
  std::function<std::string(const transport::CallDescriptor&)> describe;
};

class TcpMesh final : public transport::NetTransport, private transport::MatchOutcomes {
 public:
  /// `streams[peer]` holds `options.streams` connected, authenticated sockets (empty for this rank).
  TcpMesh(int rank, int size, std::vector<std::vector<Socket>> streams, MeshOptions options);
  ~TcpMesh();
  TcpMesh(const TcpMesh&) = delete;
  TcpMesh& operator=(const TcpMesh&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "tcp"; }
  int streamsPerPeer() const { return options_.streams; }

  /// Starts moving `op`. A send completes once its bytes are in the kernel (the buffer may then be reused).
  void post(NetOp& op) override;
  /// Waits until every op is done. On the first failure, a timeout (naming the peer still awaited) or a throw of
  /// policy.check, cancels the unfinished ops and throws; `context` names the call in the error.
  void wait(std::span<NetOp* const> ops, const CallContext& context, const transport::WaitPolicy& policy) override;
  /// The same, but returns as soon as one op is done or `interrupted()` is true (asked while it spins and after
  /// each wake-up): for groups that more operations join while they run. A failure cancels all of `ops`. With no ops it
  /// waits for `interrupted()` alone.
  void waitAny(std::span<NetOp* const> ops, const std::function<bool()>& interrupted, const CallContext& context,
               const transport::WaitPolicy& policy) override;
  /// From any thread, without blocking: a caller asleep in wait/waitAny wakes and looks again.
  void wakeWaiter() override;
  /// Cancels the ops that are still pending (their buffers are about to go away); done ones are left alone.
  void cancel(std::span<NetOp* const> ops) override;
  /// Tells every peer that this rank failed call `seq` (best effort; never blocks).
  /// `suspect` is the peer at fault as this rank sees it (-1: none), named in the peers' errors.
  void notifyFailure(std::int64_t seq, ErrorCode code, const std::string& text, int suspect = -1) override;
  /// The call `call` starts on this rank: a collective frame of its sequence number that carries another
  /// descriptor (kept aside already, or arriving later, posted for or not) fails its receives with Mismatch. So a
  /// rank whose peers are in a different call learns it from their first frame, even one it did not wait for.
  void beginCall(const transport::CallDescriptor& call) override;
  /// The call `seq` ended on this rank: what still arrives for it, or was kept for it, is dropped.
  void finishCall(std::int64_t seq) override;
  /// From any thread, without blocking: tells every peer this rank is gone (they lose it at once), fails this
  /// rank's pending ops with Aborted, and refuses new ones.
  void abort() override;
  /// Bytes kept aside for `peer` (messages that arrived before their receive was posted). For tests.
  std::size_t stashedBytes(int peer);
  /// Peer `peer`'s failure, or "" while it is connected.
  std::string peerFailure(int peer) override;
  bool peerLeft(int peer) override;
  /// This rank's progress, which its heartbeats carry (in the frame's key); any thread.
  void publishProgress(const transport::Progress& mine) override {
    myProgress_.store(mine.word(), std::memory_order_relaxed);
  }
  /// Every peer's progress as its last heartbeat or collective frame told it; any thread, takes no lock.
  std::vector<transport::PeerProgress> peerProgress() const override;
  std::uint64_t pointToPointBytesMoved() const override { return p2pMoved_.load(std::memory_order_relaxed); }
  bool arrived(int peer, transport::MessageKind kind, std::int64_t key, std::uint32_t step) override;
  void readEveryPeer(bool on) override;
  /// Registered memory (docs/NETWORK.md), for the thread that runs calls: a range its owner reuses, registered
  /// once. TCP needs no registration, so it only records the range (and NetOp::region then names it).
  const transport::Region* registerRegion(const void* base, std::size_t bytes,
                                          transport::RegionMemory memory) override {
    return regions_.add(base, bytes, memory);
  }
  void deregisterRegion(const transport::Region* region) override { regions_.remove(region); }
  /// The region holding [p, p + bytes) whole, or null.
  const transport::Region* regionOf(const void* p, std::size_t bytes) const override {
    return regions_.size() == 0 ? nullptr : regions_.find(p, bytes);
  }
  /// Bytes posted so far (sends and receives), and those of them in registered regions: how much of the traffic
  /// an RDMA transport could move without a copy. For logs and tests.
  std::uint64_t postedBytes() const { return postedBytes_.load(std::memory_order_relaxed); }
  std::uint64_t postedRegisteredBytes() const { return postedRegisteredBytes_.load(std::memory_order_relaxed); }
  /// For each stream to `peer`, the listening address of the pair ("10.0.1.5:40123"), whichever rank dialled:
  /// which rail (network interface) the stream uses. For logs and tests.
  std::vector<std::string> streamAddresses(int peer);
  /// For each stream to `peer`, this rank's own address on it (the host part, "10.0.1.4"): the interface this rank
  /// sends and receives it on. For link descriptions.
  std::vector<std::string> localStreamHosts(int peer);
  /// "TCP over eth0, eth1 (2 streams per peer)": the interfaces this rank's streams use, and how many per peer.
  std::string linkDescription() override;

 private:
  struct OutFrame;
  struct Stream;
  struct Peer;
  struct Notice {
    int peer;
    int suspect;
    ErrorCode code;
    std::string text;
  };

  void waitFor(std::span<NetOp* const> ops, const CallContext& context, const transport::WaitPolicy& policy,
               const std::function<bool()>* interrupted);  // null: every op
  void progressLoop();
  void closeGracefully();  // the destructor's last step before the sockets close
  void heartbeatTick();
  void handleEvents(const epoll_event* events, int n);  // under mu_
  void pollNow();
  void blockOnce(int timeoutMs);  // the caller sleeps in epoll_wait on its own set, then handles what came
  void signalCompletion();  // under mu_  // one non-blocking round of the progress loop, from the caller thread, if the
                            // lock is free
  // Everything below runs under mu_.
  void queueFrame(Stream& s, OutFrame frame);
  bool flush(Stream& s);     // false when the stream broke
  bool readSome(Stream& s);  // false when the stream broke or ended
  void onHeader(Stream& s);
  void noteProgress(Peer& p, const FrameHeader& h);
  void onPayloadDone(Stream& s);
  // transport::MatchOutcomes too: what the peers' matchers complete and fail.
  void complete(NetOp& op) override;
  void failOp(NetOp& op, ErrorCode code, std::string text) override;
  void endStream(Stream& s, const std::string& why);  // the stream closed or broke
  // A send on `s` failed: reads what the peer sent before it left (its failure notice names the cause worth
  // reporting), then ends the stream.
  void sendFailed(Stream& s);
  void failPeer(int peer, std::string why);  // the peer is gone: every stream, every op with it
  void applyNotice(std::int64_t seq, const Notice& notice);
  void callMismatch(int peer, const transport::CallDescriptor& theirs);  // the current call differs from a peer's
  void cancel(NetOp& op);
  void setWriteInterest(Stream& s, bool on);
  void applyInterest(Stream& s);  // the epoll events a stream is polled for, from its peer's and its own state
  void updateReading(int peer);   // stop or resume reading a peer as its kept-aside bytes pass the limit
  Peer& peer(int p) { return *peers_[static_cast<std::size_t>(p)]; }
  void start(std::vector<std::vector<Socket>> streams);  // the constructor's work, undone below when it throws
  void stopProgress();                                   // stops and joins the progress thread, if it runs
  void closeDescriptors();

  const int rank_;
  const int size_;
  const MeshOptions options_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<std::unique_ptr<Stream>> streams_;
  int epollFd_ = -1;  // the progress thread's set: streams and wakeFd_
  int wakeFd_ = -1;
  int waitEpollFd_ = -1;  // the waiting caller's set: streams and completionFd_
  int completionFd_ = -1;
  std::atomic<bool> callerBlocked_{false};  // a caller is inside wait()

  std::mutex mu_;
  std::int64_t floor_ = 0;
  std::optional<transport::CallDescriptor> current_;  // the call in progress on this rank  // collective frames with a
                                                      // key below this belong to finished calls
  std::map<std::int64_t, Notice> notices_;
  bool stopping_ = false;
  bool aborted_ = false;
  bool readEveryPeer_ = false;  // readEveryPeer: no peer is held back by what is kept aside
  std::chrono::steady_clock::time_point lastTick_{};
  std::thread progress_;
  std::unique_ptr<transport::Ticker> heartbeat_;
  transport::RegionTable regions_;           // the calls' thread only
  std::atomic<std::int64_t> myProgress_{0};  // this rank's Progress::word()
  std::atomic<std::uint64_t> p2pMoved_{0};   // pointToPointBytesMoved
  std::atomic<std::uint64_t> postedBytes_{0};
  std::atomic<std::uint64_t> postedRegisteredBytes_{0};
};

}  // namespace braid::tcp
