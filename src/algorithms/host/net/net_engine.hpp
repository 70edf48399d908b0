// The Engine of ranks that reach each other over a network transport (transport::NetTransport; TCP today): ranks
// on other hosts, or any ranks with BRAID_TRANSPORT=tcp.
//
// Algorithms (n ranks, b bytes; "direct" below directMaxBytes, where latency dominates):
// - allreduce: direct = every rank sends its input to every peer and reduces all n in rank order (one message
//   latency, n-1 messages), or from 4 ranks on recursive doubling (log2 n exchanges of the buffer); ring =
//   reduce-scatter then allgather around a ring, segments pipelined so that the reduction of one overlaps the transfer
//   of the next (2(n-1)/n * b per rank on the wire: bandwidth-optimal).
// - reduce: direct to the root, or ring reduce-scatter then every block to the root.
// - reduce_scatter: ring; allgather(v): direct or ring; broadcast: binomial tree, or a pipelined chain for
//   large buffers; gather/scatter: direct with the root; alltoall(v): all pairs at once; barrier: dissemination.
// Every rank reduces the same operands in the same order for a given block, so results are identical on all ranks.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "algorithms/engine.hpp"
#include "algorithms/host/net/net_call.hpp"
#include "algorithms/host/net/net_p2p.hpp"
#include "algorithms/host/net/registered_scratch.hpp"
#include "algorithms/patterns/partition.hpp"
#include "transport/net_transport.hpp"
#include "tuning/algorithm.hpp"

namespace braid::host {

/// The allreduce algorithms over TCP, described for the selector: direct, recursive doubling and the ring.
std::vector<tuning::AlgorithmDescriptor> netAllreduceAlgorithms();
/// The descriptor of `id` among them, for a policy that fixes one (tests); InvalidArgument for another engine's id.
const tuning::AlgorithmDescriptor& netAlgorithm(tuning::Algorithm id);

/// The engine's choices, made by core/'s selector over netAllreduceAlgorithms(): which allreduce algorithm a size
/// takes (every other collective goes direct unless this says ring), and why.
struct NetPolicy {
  std::function<const tuning::AlgorithmDescriptor&(std::size_t bytes)> choose;
  std::function<std::string(std::size_t bytes)> explain;
  /// BRAID_COMPRESS=bf16: ring allreduces of float32 sums and averages carry bfloat16 (net_compressed.cpp).
  bool compressBf16 = false;
};

/// What a ring reduce-scatter does around accum (NetEngine::ringReduceScatter); empty members leave the plain ring's
/// behaviour. At namespace scope: a default member initializer in a nested class cannot serve a default argument of
/// the enclosing one.
struct RingHooks {
  /// Runs before accum's block is first read: before it is sent unreduced, or reduced on the host.
  std::function<void(int block)> touch;
  /// Reduces in place of the host: dst = accum's segment `seg` (as it is where the data lives) op `received`,
  /// done when it returns. Then touch runs only for the block sent unreduced.
  std::function<void(std::byte* dst, const std::byte* received, const patterns::Block& seg, ReduceKind kind)> reduce;
  /// Where received blocks land (two of the largest block), when the reduction needs them somewhere it can read.
  std::function<std::byte*(std::size_t bytes)> receiveArea;
  /// This rank's contribution when it is not in accum (the caller's input, read in place): the unreduced block goes
  /// out from it and each reduction reads it, so accum needs no copy of the input first (a full pass over memory
  /// before the first byte is sent). Null: accum holds it.
  const std::byte* input = nullptr;
  /// A ring allreduce's allgather started inside the reduce-scatter: `lastStep` runs as the last step begins (the
  /// allgather posts its receives), `owned(j)` once segment j of this rank's block is final (it goes out at once,
  /// while the rest of the block is still being reduced). The reduce-scatter then leaves the waiting to the
  /// allgather. Empty: the allgather starts after the reduce-scatter's last send completed.
  std::function<void()> lastStep;
  std::function<void(std::size_t segment)> owned;
};

class NetEngine final : public Engine {
 public:
  /// `spinMicros`: how long a waiting caller reads its sockets itself before it sleeps (BRAID_TCP_SPIN_US).
  /// `fingerprint` (BRAID_DEBUG=detail): before each call every rank shows every other its call's descriptor, so
  /// any disagreement fails the call with Mismatch on every rank, whatever the algorithm's message pattern.
  NetEngine(std::unique_ptr<transport::NetTransport> net, NetPolicy policy, long spinMicros, bool fingerprint = false);

  transport::NetTransport& transport() { return *net_; }
  int rank() const { return net_->rank(); }
  int size() const { return net_->size(); }

  const char* transportName() const override { return net_->name(); }
  std::string allreduceAlgorithm(std::size_t bytes) const override;
  std::string explainAllreduce(std::size_t bytes) const override;

  void run(const CallArgs& call, const OpEnv& env) override;
  /// The ring allreduce, allgather and reduce_scatter window by window (net_staged.cpp): each window holds a piece of
  /// every rank's block. Direct sizes and compressed allreduces are not pipelined.
  bool runStaged(const CallArgs& call, StagedBuffer& staged, const OpEnv& env) override;
  void wakePointToPoint() override;
  void abort() override { net_->abort(); }
  const transport::Region* registerRegion(const void* base, std::size_t bytes,
                                          transport::RegionMemory memory) override {
    return net_->registerRegion(base, bytes, memory);
  }
  void deregisterRegion(const transport::Region* region) override { net_->deregisterRegion(region); }
  std::string peerFailure(int peer) override { return net_->peerFailure(peer); }
  bool peerLeft(int peer) override { return net_->peerLeft(peer); }
  void publishProgress(const transport::Progress& mine) override { net_->publishProgress(mine); }
  std::vector<transport::PeerProgress> peerProgress() override { return net_->peerProgress(); }

 private:
  using BlockFn = std::function<patterns::Block(int)>;

  // The calls run() dispatches to.
  void runBarrier(const OpEnv& env);
  void runReject(const OpEnv& env);
  void runAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, const OpEnv& env);
  void runReduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                 const OpEnv& env);
  void runReduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                        const OpEnv& env);
  void runBroadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env);
  void runAllgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env);
  void runAllgatherv(const void* send, std::size_t sendCount, void* recv, std::span<const std::size_t> recvCounts,
                     std::span<const std::size_t> displs, DataType type, const OpEnv& env);
  void runGather(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env);
  void runScatter(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env);
  void runAlltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env);
  void runAlltoallv(const void* send, std::span<const std::size_t> sendCounts, std::span<const std::size_t> sendDispls,
                    void* recv, std::span<const std::size_t> recvCounts, std::span<const std::size_t> recvDispls,
                    DataType type, const OpEnv& env);
  bool stagedAllreduce(StagedBuffer& staged, std::size_t count, DataType type, ReduceOp op, const OpEnv& env);
  bool stagedAllgather(StagedBuffer& staged, std::size_t count, DataType type, const OpEnv& env);
  bool stagedReduceScatter(StagedBuffer& staged, std::size_t recvCount, DataType type, ReduceOp op, const OpEnv& env);

  /// Runs `body` as the call `call`: on failure tells the peers (so they stop waiting for this rank) and
  /// rethrows; either way the transport drops what still arrives for the call afterwards.
  template <typename Body>
  void runCall(const transport::CallDescriptor& call, const OpEnv& env, Body&& body);

  /// Latency-bound sizes (one message per peer) against pipelined ones, and recursive doubling for allreduce
  /// (the selector says when and why: braid explain).
  bool direct(std::size_t bytes) const {
    return size() <= 1 || policy_.choose(bytes).id != tuning::Algorithm::kTcpRing;
  }
  bool doubling(std::size_t bytes) const {
    return size() > 1 && policy_.choose(bytes).id == tuning::Algorithm::kTcpDoubling;
  }
  /// Reduce-scatter around the ring over `accum` (this rank's contribution, or where hooks.input's is reduced to):
  /// afterwards block `rank` holds the reduction over all ranks, written to `ownedOut` (which may alias accum's
  /// block). `hooks` (for the windowed ring, net_staged.cpp) may stand in for reading and reducing accum.
  void ringReduceScatter(NetCall& call, std::byte* accum, const BlockFn& blocks, std::size_t elemBytes, DataType type,
                         ReduceOp op, std::byte* ownedOut, std::uint32_t stepBase, const RingHooks& hooks = {});
  /// Allgather around the ring: each rank starts with its block of `buf` filled and ends with all of them.
  /// `prepare` (may be empty) puts this rank's block in place; it runs once the receives are posted, so what
  /// arrives meanwhile lands in place instead of being kept aside. `landed` (may be empty) runs for each received
  /// segment once it is in place, in order. (RingGather runs it in parts.)
  void ringAllgather(NetCall& call, std::byte* buf, const BlockFn& blocks, std::size_t elemBytes,
                     std::uint32_t stepBase, const std::function<void()>& prepare = {},
                     const std::function<void(const patterns::Block&)>& landed = {});
  /// Every rank's block to every peer at once, straight into place.
  void directAllgather(NetCall& call, std::byte* buf, const BlockFn& blocks, std::size_t elemBytes,
                       const std::function<void()>& prepare = {});
  /// Reduces `count` elements of n sources gathered from all ranks (own input included) in rank order.
  void directReduce(NetCall& call, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                    int root);
  std::byte* scratch(std::size_t bytes);
  /// Recursive doubling: log2(p) exchanges of the whole buffer (ranks past the largest power of two p fold into
  /// rank - p first and get the result back last).
  void doublingAllreduce(NetCall& call, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op);
  /// Whether an allreduce takes the bfloat16-wire ring: float32 sum or average, the ring chosen, compression on.
  bool compresses(std::size_t count, DataType type, ReduceOp op) const;
  void compressedAllreduce(NetCall& call, const void* send, void* recv, std::size_t count, ReduceOp op);
  /// An empty message to and from every peer: its header carries the call's descriptor, which the transport checks.
  void exchangeFingerprints(NetCall& call);

  std::unique_ptr<transport::NetTransport> net_;
  NetPolicy policy_;
  long spinMicros_;
  bool fingerprint_;
  // Reused from call to call, so registered with the transport (docs/NETWORK.md).
  RegisteredScratch scratch_;
  RegisteredScratch wire_;  // the bfloat16 ring's buffers
  RegisteredScratch workspace_;
  std::vector<const void*> sources_;
  NetPointToPoint p2p_;  // after net_: it sends through it
};

}  // namespace braid::host

// ---- template definitions ----

#include "algorithms/host/round_sync.hpp"
#include "base/error.hpp"

namespace braid::host {

template <typename Body>
void NetEngine::runCall(const transport::CallDescriptor& call, const OpEnv& env, Body&& body) {
  try {
    net_->beginCall(call);
    NetCall messages(*net_, call, env, spinMicros_);
    if (fingerprint_) exchangeFingerprints(messages);
    body(messages);
  } catch (const Error& e) {
    net_->notifyFailure(call.seq, e.code(),
                        strCat("rank ", rank(), " failed ", describeInWords(call), ": ", e.message()),
                        e.context().peer);
    net_->finishCall(call.seq);
    throw;
  }
  net_->finishCall(call.seq);
}

}  // namespace braid::host
