// What the communicator runs its calls on. An engine is two interfaces: Collectives, the calls themselves (every
// collective and point-to-point over one kind of connection between the ranks), which arrive one at a time, in issue
// order, with their arguments already checked by core/; and EngineControl, what reaches the engine outside its calls
// (abort and peer failure, progress words, registrations), some of it from any thread. LocalEngine serves ranks of
// one host (shared memory or, for thread ranks, the heap); NetEngine serves ranks anywhere over a network transport;
// DeviceEngine and StagingEngine run calls on GPU memory over one of those. Only point-to-point calls may join a
// point-to-point group that is running (p2p_feed.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/call_args.hpp"
#include "algorithms/op_env.hpp"
#include "algorithms/staged_buffer.hpp"
#include "braid/types.hpp"
#include "transport/progress.hpp"
#include "transport/region.hpp"

namespace braid {

/// The calls: each runs to its end on the thread running calls (or queues GPU work that will), in issue order.
/// An engine implements run() (and runStaged() where it pipelines staged buffers); the named forms below build the
/// call and are what its callers write.
class Collectives {
 public:
  virtual ~Collectives() = default;

  /// Runs `call`. A point-to-point group runs to completion with what joins it through env.feed, when the engine
  /// takes part in feeds (p2p_feed.hpp). A rejected call (CallArgs::rejected) tells the peers that this rank rejected
  /// its arguments for the call `env` names: they fail that call with Mismatch.
  virtual void run(const CallArgs& call, const OpEnv& env) = 0;
  /// `call` (an allreduce, allgather or reduce_scatter, its buffers unused) on buffers only `staged` reaches (GPU
  /// memory between hosts), window by window, its copies overlapped with the transfers. Returns false, having done
  /// nothing, where this engine does not pipeline that call (the caller then copies the whole buffer in and out);
  /// the answer is the same on every rank. StagedBuffer's offsets are the input's and the output's.
  virtual bool runStaged(const CallArgs& /*call*/, StagedBuffer& /*staged*/, const OpEnv& /*env*/) { return false; }

  void barrier(const OpEnv& env) { run(CallArgs::barrier(), env); }
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, const OpEnv& env) {
    run(CallArgs::allreduce(send, recv, count, type, op), env);
  }
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root, const OpEnv& env) {
    run(CallArgs::reduce(send, recv, count, type, op, root), env);
  }
  void reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                     const OpEnv& env) {
    run(CallArgs::reduceScatter(send, recv, recvCount, type, op), env);
  }
  void broadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env) {
    run(CallArgs::broadcast(buf, count, type, root), env);
  }
  void allgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) {
    run(CallArgs::allgather(send, recv, count, type), env);
  }
  void allgatherv(const void* send, std::size_t sendCount, void* recv, std::span<const std::size_t> recvCounts,
                  std::span<const std::size_t> displs, DataType type, const OpEnv& env) {
    run(CallArgs::allgatherv(send, sendCount, recv, recvCounts, displs, type), env);
  }
  void gather(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env) {
    run(CallArgs::gather(send, recv, count, type, root), env);
  }
  void scatter(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env) {
    run(CallArgs::scatter(send, recv, count, type, root), env);
  }
  void alltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) {
    run(CallArgs::alltoall(send, recv, count, type), env);
  }
  void alltoallv(const void* send, std::span<const std::size_t> sendCounts, std::span<const std::size_t> sendDispls,
                 void* recv, std::span<const std::size_t> recvCounts, std::span<const std::size_t> recvDispls,
                 DataType type, const OpEnv& env) {
    run(CallArgs::alltoallv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type), env);
  }
  void pointToPoint(std::span<const P2pOp> ops, const OpEnv& env) { run(CallArgs::pointToPoint(ops), env); }
  void reject(const OpEnv& env) { run(CallArgs::rejected(), env); }
  bool allreduceStaged(StagedBuffer& staged, std::size_t count, DataType type, ReduceOp op, const OpEnv& env) {
    return runStaged(CallArgs::allreduce(nullptr, nullptr, count, type, op), staged, env);
  }
  bool allgatherStaged(StagedBuffer& staged, std::size_t count, DataType type, const OpEnv& env) {
    return runStaged(CallArgs::allgather(nullptr, nullptr, count, type), staged, env);
  }
  bool reduceScatterStaged(StagedBuffer& staged, std::size_t recvCount, DataType type, ReduceOp op, const OpEnv& env) {
    return runStaged(CallArgs::reduceScatter(nullptr, nullptr, recvCount, type, op), staged, env);
  }
};

/// Outside the calls: what the communicator tells an engine or asks of it between calls and, where said, from any
/// thread while a call runs.
class EngineControl {
 public:
  virtual ~EngineControl() = default;

  /// From any thread, at any time, without blocking: tell the peers this rank is gone (they fail their waits on it
  /// with PeerLost) and end this rank's waits (with Aborted, through OpEnv::check and the transport's own ops).
  virtual void abort() = 0;
  /// Why `peer` can no longer take part ("" while it can), as this rank knows now. For the thread running calls.
  virtual std::string peerFailure(int peer) = 0;
  /// From any thread, without blocking, once: this rank's communicator broke in call `seq` (-1: a point-to-point
  /// call) and it makes no more calls. Peers waiting for it, or starting a call with it, then fail with PeerLost at
  /// once instead of timing out or finishing a call this rank failed. Transports that tell the peers of every failed
  /// call themselves (TCP's failure notices) need nothing more.
  virtual void tellPeersBroken(std::int64_t /*seq*/, ErrorCode /*code*/) {}
  /// Why `peer`, though it lives, takes part in no call again ("" while it may): it told its peers its communicator
  /// broke (tellPeersBroken). Transports whose peers learn that from failure notices of their own (TCP) say "". Any
  /// thread, never blocks.
  virtual std::string peerBroke(int /*peer*/) { return ""; }
  /// Whether `peer` destroyed its communicator, which peerFailure also says. A peer that leaves after its last call
  /// is no failure of the calls still finishing here: only a wait for that very peer should fail on it. Any thread.
  virtual bool peerLeft(int /*peer*/) { return false; }
  /// From any thread, without blocking: env.feed of the running group has operations to take; a wait of that group
  /// asleep should wake and take them (the feed's first check between sleeps would, a slice later).
  virtual void wakePointToPoint() {}
  /// Publishes this rank's progress where the peers learn it (core calls it as each collective begins and ends;
  /// transport/progress.hpp), and what this rank knows of theirs, for flight records (any thread, never blocks
  /// for long). Engines whose transport carries no such word publish nothing and know nothing.
  virtual void publishProgress(const transport::Progress& /*mine*/) {}
  virtual std::vector<transport::PeerProgress> peerProgress() { return {}; }
  /// Registers [ptr, ptr + bytes) (Communicator::registerBuffer): collective, every rank in call order. Returns an
  /// id for deregisterBuffer, 0 when the engine reads no peer's memory in place (then registering changes nothing).
  virtual std::uint64_t registerBuffer(void* /*ptr*/, std::size_t /*bytes*/, const OpEnv& /*env*/) { return 0; }
  virtual void deregisterBuffer(std::uint64_t /*id*/, const OpEnv& /*env*/) {}
  /// Memory its owner reuses from call to call (the device side's pinned staging buffers), registered once with
  /// this engine's network transport (docs/NETWORK.md); this rank only, not collective. Null where the engine's
  /// transport keeps no such record (shared memory).
  virtual const transport::Region* registerRegion(const void* /*base*/, std::size_t /*bytes*/,
                                                  transport::RegionMemory /*memory*/) {
    return nullptr;
  }
  virtual void deregisterRegion(const transport::Region* /*region*/) {}
  /// A failure of work that ran after its call returned (a GPU kernel that gave up waiting), as
  /// ncclCommGetAsyncError reports it; none for engines whose calls finish before they return. Any thread.
  virtual std::optional<Error> asyncError(const CallContext& /*ctx*/) const { return std::nullopt; }
};

class Engine : public Collectives, public EngineControl {
 public:
  /// "shm", "memory" or "tcp".
  virtual const char* transportName() const = 0;
  /// The algorithm an allreduce of `bytes` runs ("direct", "rsag", "ring"), and in words why.
  virtual std::string allreduceAlgorithm(std::size_t bytes) const = 0;
  virtual std::string explainAllreduce(std::size_t bytes) const = 0;

  /// Whether a call `op` of `bytes` holds its caller until it ends (its host takes part), rather than queuing GPU
  /// work and returning; nullopt while that is not settled (a device engine before its first call connected it).
  /// The same answer on every rank. The thread running calls, or one ordered after it. Host engines hold every call.
  virtual std::optional<bool> holdsCaller(const char* /*op*/, std::size_t /*bytes*/) const { return true; }
};

}  // namespace braid
