// One collective call's messages over the network transport: posts sends and receives named by (call, step), waits
// for them, and on the way out cancels whatever is unfinished so the transport never holds a pointer into a dead
// frame.
#pragma once

#include <cstdint>
#include <deque>

#include "algorithms/op_env.hpp"
#include "transport/net_transport.hpp"

namespace braid::host {

class NetCall {
 public:
  /// `call.seq` names the call on the wire; for point-to-point groups pass kind kPointToPoint.
  /// `spinMicros`: how long a wait serves the transport itself before it sleeps (BRAID_TCP_SPIN_US).
  NetCall(transport::NetTransport& net, const transport::CallDescriptor& call, const OpEnv& env, long spinMicros,
          transport::MessageKind kind = transport::MessageKind::kCollective);
  ~NetCall();
  NetCall(const NetCall&) = delete;
  NetCall& operator=(const NetCall&) = delete;

  int rank() const { return net_.rank(); }
  int size() const { return net_.size(); }

  /// Starts sending `bytes` to `peer` as message `step` of this call (key: the call's sequence number, or for
  /// point-to-point the tag).
  transport::NetOp& send(int peer, std::uint32_t step, const void* data, std::size_t bytes, std::int64_t key);
  transport::NetOp& recv(int peer, std::uint32_t step, void* data, std::size_t bytes, std::int64_t key);
  transport::NetOp& send(int peer, std::uint32_t step, const void* data, std::size_t bytes) {
    return send(peer, step, data, bytes, call_.seq);
  }
  transport::NetOp& recv(int peer, std::uint32_t step, void* data, std::size_t bytes) {
    return recv(peer, step, data, bytes, call_.seq);
  }
  void wait(transport::NetOp& op);
  /// Waits for every op posted so far (that an earlier waitAll did not already see done).
  void waitAll();
  /// Waits until one of `ops` is done or `interrupted()` (NetTransport::waitAny).
  void waitAny(std::span<transport::NetOp* const> ops, const std::function<bool()>& interrupted);
  /// Forgets the done ops at the front that `released` lets go (a group that others keep joining may never end;
  /// what is done can go). An op that completes on the progress thread while its caller still holds a pointer to
  /// it is done but not yet released: freeing it then would leave the caller reading freed memory.
  void forgetDone(const std::function<bool(const transport::NetOp&)>& released);

 private:
  transport::NetOp& make(transport::NetOp::Dir dir, int peer, std::uint32_t step, const void* data, std::size_t bytes,
                         std::int64_t key);
  void checkWait();  // between a wait's sleeps: the call aborted or timed out

  transport::NetTransport& net_;
  transport::CallDescriptor call_;
  transport::MessageKind kind_;
  const OpEnv& env_;
  transport::WaitPolicy policy_;
  std::deque<transport::NetOp> ops_;  // a deque: ops keep their addresses while more are added
  std::size_t settled_ = 0;           // ops_[0, settled_) are done: a waitAll returned after them
};

}  // namespace braid::host
