// The communicator behind braid::Communicator: checks arguments, asks the selector, runs the algorithm, in issue
// order, inline on the calling thread when nothing is queued (a hand-off to another thread costs a cross-core
// wake-up, ~20 us, more than a small collective) and on its progress thread for async calls.
#pragma once

#include <atomic>
#include <condition_variable>
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

#include "algorithms/device/stream_handoff.hpp"
#include "algorithms/engine.hpp"
#include "algorithms/staging_layout.hpp"
#include "base/config.hpp"
#include "base/data_type.hpp"
#include "base/function_ref.hpp"
#include "bootstrap/store.hpp"
#include "braid/braid.hpp"
#include "core/engine_stack.hpp"
#include "core/flight_recorder.hpp"
#include "core/hierarchy.hpp"
#include "core/memory_kind.hpp"
#include "core/placement.hpp"
#include "transport/local_group.hpp"

namespace braid::core {

class CommunicatorImpl {
 public:
  /// `keepAlive` holds what the bootstrap made that must live as long as the communicator (store, server).
  CommunicatorImpl(int rank, int size, std::unique_ptr<Engine> engine, Settings settings,
                   std::shared_ptr<void> keepAlive = nullptr, HostLayout host = {});
  /// Ranks of one host: a LocalEngine over `group`, its algorithms chosen by the selector for `host`.
  CommunicatorImpl(int rank, int size, std::unique_ptr<transport::LocalGroup> group, Settings settings,
                   std::shared_ptr<void> keepAlive = nullptr, HostLayout host = {});
  ~CommunicatorImpl();

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::int64_t sequenceNumber() const;
  const Settings& settings() const { return settings_; }
  const char* transportName() const { return engines_.host().transportName(); }
  /// The shared-memory group of a communicator whose ranks share a host; null over TCP.
  transport::LocalGroup* localGroup() const { return engines_.localGroup(); }

  /// What the next allreduce of `bytes` would run and why.
  std::string explainAllreduce(std::size_t bytes) const;
  /// BRAID_LOG=info: the selector's reasoning for the first host allreduce of each power of two of sizes.
  void logChoice(std::size_t bytes);

  using Body = std::function<void(const OpEnv&)>;
  using Check = std::function<void(const CallContext&)>;
  /// One call: its name, its argument checks and what it does. Check and Body are callables; blocking calls keep
  /// them as they are (no allocation on the inline path), queued calls hold them as std::function.
  template <typename CheckFn, typename BodyFn>
  struct CallOf {
    // A constructor, not aggregate initialisation: GCC clears an aggregate this large with `rep stos` before it
    // fills it in, which costs a small call a few percent of its own time.
    CallOf(const char* name, CheckFn checks, BodyFn runs, bool isCollective, CallInfo recorded,
           std::shared_ptr<const std::vector<P2pOp>> group, const void* device)
        : op(name),
          check(std::move(checks)),
          body(std::move(runs)),
          collective(isCollective),
          info(recorded),
          p2p(std::move(group)),
          gpu(device) {}
    const char* op;
    CheckFn check;
    BodyFn body;
    bool collective = true;  // collectives take a sequence number and meet their peers even when rejected
    CallInfo info{};         // for the flight recorder
    /// A point-to-point group on host buffers: queued, it may run as a fed group that later such calls join
    /// (p2p_group.cpp). Null for every other call.
    std::shared_ptr<const std::vector<P2pOp>> p2p{};
    const void* gpu = nullptr;  // one of its device buffers (null: it has none): binds the device engine's GPU
  };
  using Call = CallOf<Check, Body>;
  /// The same call made on other pointers (the host copies of its device buffers, in its extents' order).
  using OnCopies = std::function<Call(std::span<void* const>)>;

  /// Runs a call in issue order and waits for it: on the calling thread when nothing else is running or queued,
  /// else after what is. When `check` throws, a collective still takes part in one round so that its peers fail
  /// with Mismatch instead of waiting, then the error is rethrown.
  template <typename CheckFn, typename BodyFn>
  void run(CallOf<CheckFn, BodyFn> call, const CallOptions& opts) {
    // Idle: this call takes the communicator and its number with one compare-and-swap, no lock.
    const std::int64_t seq = takeGate(call.collective, kBusy, true);
    if (seq == kQueueIt) {
      if (onItsProgressThread()) {
        // A completion callback's blocking call would be queued behind the call the callback runs in.
        fail(ErrorCode::kInvalidArgument, ErrorContext{.rank = rank_, .peer = -1, .op = call.op, .seq = -1},
             "a blocking call on this communicator's own progress thread (from a Work::onCompletion callback) would "
             "wait for itself: make the Async form of the call there");
      }
      Work(enqueue(Call{call.op, std::move(call.check), std::move(call.body), call.collective, call.info, call.p2p,
                        call.gpu},
                   opts, true))
          .wait();
      return;
    }
    const OpEnv env = makeEnv(call.op, seq, opts);
    const std::uint64_t record = noteBegan(call.op, seq, call.info);
    try {
      throwIfBroken(env.context);
      bool argumentsOk = false;
      try {
        call.check(env.context);
        argumentsOk = true;
      } catch (const Error&) {
        if (call.collective) rejectRound(env);
        throw;
      }
      if (argumentsOk) call.body(env);
    } catch (const Error& e) {
      const Error told = withPeerProgress(e);
      noteEnded(record, seq, &told);
      noteFailure(told);
      release();
      throw told;
    } catch (...) {
      const Error unexpected(ErrorCode::kInternal, "unexpected exception");
      noteEnded(record, seq, &unexpected);
      noteFailure(unexpected);
      release();
      throw;
    }
    noteEnded(record, seq, nullptr);
    release();
  }

  /// A call on device buffers whose caller asked not to be held (CallOptions::streamAsync), where its path would
  /// hold it: queued on the progress thread, on host copies of `extents()` that its stream makes
  /// (device/stream_handoff.hpp); `onCopies` makes the call on those copies. Returns its Work, or null where the
  /// call runs as usual instead: it holds no one, it has a bad argument (run() rejects it with its peers), the
  /// communicator is broken, or the driver cannot queue the stream's wait.
  template <typename CheckFn, typename BodyFn, typename ExtentsFn>
  std::shared_ptr<WorkState> detach(const CallOf<CheckFn, BodyFn>& call, ExtentsFn&& extents, const OnCopies& onCopies,
                                    const CallOptions& opts) {
    const CallContext ctx{.rank = rank_, .peer = -1, .op = call.op, .seq = -1};
    if (brokenFlag_.load(std::memory_order_acquire)) return nullptr;
    try {
      call.check(ctx);
    } catch (const Error&) {
      return nullptr;
    }
    if (!detaches(call.gpu, call.op, call.info.count * dataTypeSize(call.info.type))) return nullptr;
    const std::vector<DeviceExtent> ranges = extents();
    return detachChecked(call.op, call.collective, call.info, ranges, onCopies, opts);
  }

  /// Queues a call; its Work completes when it ran.
  template <typename CheckFn, typename BodyFn>
  Work submit(CallOf<CheckFn, BodyFn> call, const CallOptions& opts) {
    return Work(enqueue(
        Call{call.op, std::move(call.check), std::move(call.body), call.collective, call.info, call.p2p, call.gpu},
        opts, false));
  }

  Engine& engine() { return engines_.host(); }
  /// An allreduce on the buffers of `route`: hierarchical across hosts where the placement and size call for it
  /// (core/hierarchy.hpp), else on engineFor(route).
  void allreduce(const Route& route, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                 const OpEnv& env);
  /// The engine for a call whose buffers took `route`: the host engine (after the call's stream, when it has
  /// one) or the device engine, made at the first call on GPU memory.
  Engine& engineFor(const Route& route, const OpEnv& env) { return engines_.forRoute(route, env); }
  /// The device engine, when a call on device buffers made it (else null). For the thread running calls.
  Engine* deviceEngine() const { return engines_.device(); }
  /// What a GPU kernel of this communicator reported after its call returned (ncclCommGetAsyncError).
  std::optional<Error> asyncError() const;
  /// From any thread, in any state, without blocking: ends this rank's calls with Aborted (running and queued ones
  /// too, within a wait slice), makes every later call fail with Aborted, and tells the peers.
  void abort();
  /// The handle that may abort this communicator from another thread (it was created with it).
  void attachAbortHandle(std::shared_ptr<AbortHandle> handle);
  /// An environment for calls the communicator makes on its own behalf (shrink), outside the issue order.
  OpEnv internalEnv(const char* op) const { return makeEnv(op, -1, CallOptions{}); }

  /// The store this communicator was created over (null for communicators made without one, e.g. thread ranks
  /// over the in-memory transport), and what must outlive it: communicators split from it meet there.
  void attachStore(std::shared_ptr<bootstrap::Store> store) { store_ = std::move(store); }
  const std::shared_ptr<bootstrap::Store>& store() const { return store_; }
  const std::shared_ptr<void>& keepAlive() const { return keepAlive_; }
  /// Numbers for the store prefixes of split and subgroup communicators: every rank that takes part counts the
  /// same, because these calls are made in the same order on every rank that makes them.
  std::int64_t nextSplitNumber() { return splits_++; }
  std::int64_t nextSubgroupNumber(const std::vector<int>& ranks) { return subgroups_[ranks]++; }
  /// Fails as every call does once the communicator is broken or aborted (also for what is made from it: split,
  /// subgroup).
  void throwIfBroken(const CallContext& ctx) const;
  /// Where the ranks run (core/placement.hpp), learned at creation; communicators made without a store (thread
  /// ranks) are on one host.
  void attachPlacement(Placement placement);
  const Placement& placement() const { return placement_; }
  /// The GPU (device::gpuIdentity) this rank shares with ranks of other hosts on its machine; empty: none.
  void attachSharedGpu(std::string gpu) { engines_.attachSharedGpu(std::move(gpu)); }
  /// The flight recorder's JSON: this rank's last calls and how they stand (core/flight_recorder.hpp).
  /// With what this rank knows of every peer's progress (transport/progress.hpp). Any thread.
  std::string flightRecord() const;
  /// "shm/direct", "tcp/ring", ...: what an allreduce of `bytes` runs.
  std::string allreduceAlgorithm(std::size_t bytes) const;
  /// What joins this rank to its peers, in words (Communicator::linkDescription; core/link_description.cpp).
  std::string linkDescription();

  /// With BRAID_FLIGHT_RECORDER=PREFIX: the flight record into PREFIX.rankR.json, `why` logged beside it. From any
  /// thread (the record has its own lock): failures, abort, and BRAID_FLIGHT_RECORDER_SIGNAL's watcher call it.
  void dumpFlightRecord(const std::string& why) const;

 private:
  struct Task {
    std::int64_t seq;
    const char* op;
    CallOptions opts;
    Body body;
    std::shared_ptr<WorkState> work;
    CallInfo info{};                                // for the flight recorder
    std::int64_t issuedNs = 0;                      // on the recorder's clock
    std::uint64_t record = 0;                       // its flight recorder entry, once it started
    std::shared_ptr<const std::vector<P2pOp>> p2p;  // its operations, when it may run in a fed group
    std::uint64_t releases = 0;                     // a detached call: the handoff ticket its end releases
    bool device = false;  // it runs on the device engine (and may settle what that engine does)
    /// A call on host buffers that a running point-to-point group may run between its steps (p2p_group.cpp): not
    /// itself a point-to-point group, nothing on a stream or the device engine.
    bool interleaves() const { return !p2p && !device && releases == 0 && opts.stream == nullptr; }
  };
  class GroupFeed;

  std::shared_ptr<WorkState> enqueue(Call call, const CallOptions& opts, bool mayRunInline, std::uint64_t releases = 0);
  /// Whether a device call `op` of `bytes` would hold its caller, decided from the calls issued before it (the same
  /// on every rank), and the handoff is there to detach it.
  bool detaches(const void* gpu, const char* op, std::size_t bytes);
  std::shared_ptr<WorkState> detachChecked(const char* op, bool collective, const CallInfo& info,
                                           std::span<const DeviceExtent> extents, const OnCopies& onCopies,
                                           const CallOptions& opts);
  /// A detached call failed: asyncError() reports it and every later call fails with it.
  void noteDetachedFailure(const Error& e);
  /// A timeout that names a peer, with where that peer was as this rank knows (behind, in this call, ahead); other
  /// errors as they are.
  Error withPeerProgress(const Error& e) const;
  // A call starts or ends: its flight recorder entry, and for collectives the progress word the peers read.
  /// A queued task starts: the thread that took the gate for it, under mu_, so that a record never shows it both
  /// queued and started, or neither.
  void noteStarted(Task& task) {
    task.record = recorder_.began(task.op, task.seq, task.info, task.issuedNs);
    publishRunning(task.seq, true);
  }
  /// A call issued and started at once, on the issuing thread: returns its record.
  std::uint64_t noteBegan(const char* op, std::int64_t seq, const CallInfo& info) {
    const std::uint64_t record = recorder_.began(op, seq, info);
    publishRunning(seq, true);
    return record;
  }
  void noteEnded(std::uint64_t record, std::int64_t seq, const Error* error) {
    recorder_.ended(record, error);
    publishRunning(seq, false);
  }
  void publishRunning(std::int64_t seq, bool running) {
    // A broken communicator's calls fail without meeting anyone: its peers keep seeing where it was when it broke
    // (a peer's group that waits for it goes by that, core/p2p_group.cpp).
    if (seq >= 0 && !brokenFlag_.load(std::memory_order_acquire)) {
      engines_.host().publishProgress(transport::Progress{seq, running});
    }
  }
  /// One round that tells the peers this rank rejected its arguments (they fail with Mismatch).
  void rejectRound(const OpEnv& env);
  /// Records an error that leaves the ranks out of step: later calls fail at once.
  void noteFailure(const Error& e);
  /// Makes later calls fail at once, naming `e`, whatever its code (the first such error is kept).
  void breakWith(const Error& e);
  void announceBroken(const Error& e);  // the first failure that broke it: a flight record, and the peers told
  /// Ends an inline call: lets queued calls run.
  /// Takes the next sequence number (for a collective; -1 for other calls) and sets `flags` in one step, unless
  /// `ifIdle` and the communicator is busy or has queued tasks: then kQueueIt. Lock-free; setting kQueued needs mu_.
  static constexpr std::int64_t kQueueIt = -2;
  std::int64_t takeGate(bool collective, std::uint64_t flags, bool ifIdle);
  void release();
  /// Runs a task; on the progress thread (`mayFeed`) a point-to-point one runs as a fed group (p2p_group.cpp).
  /// `alongside`: the task runs inside such a group, whose messages its waits move with it (P2pFeed::interleave).
  void execute(Task& task, bool mayFeed, FunctionRef<void()> alongside = {});
  /// How often such a task's waits move the group's messages once they sleep: a 256 KiB ring's worth from a peer
  /// still sending to this rank every ~150 us (with the spin before the first sleep), about what a timer's slack
  /// allows, so that its send completes and it reaches the collective.
  static constexpr long kAlongsideSliceMicros = 50;
  /// Runs `first` and the point-to-point calls queued behind it while it runs, each finishing when its operations
  /// are done: nonblocking sends and receives progress together instead of in issue order.
  void executeGroup(Task& first);
  void progressLoop();
  /// Whether the calling thread is this communicator's progress thread (Work::onCompletion callbacks run there).
  bool onItsProgressThread() const;
  OpEnv makeEnv(const char* op, std::int64_t seq, const CallOptions& opts) const;

  const int rank_;
  const int size_;
  const Settings settings_;
  EngineStack engines_;
  std::shared_ptr<void> keepAlive_;
  Placement placement_;
  std::uint64_t loggedSizes_ = 0;  // logChoice's powers of two already logged
  bool hierarchyFits_ = false;     // Hierarchy::fits(placement_), asked once rather than at every allreduce
  FlightRecorder recorder_;
  /// With BRAID_TRACE=PREFIX, at destruction: the calls as a Chrome trace into PREFIX.rankR.PID-N.json.
  void writeTrace() const;
  static constexpr std::size_t kMostTraceEvents = std::size_t{1} << 20;  // ~64 MiB of events at most
  // Made at the first hierarchical allreduce by the thread running calls; abort() reads it from any thread.
  std::unique_ptr<Hierarchy> hierarchy_;
  std::atomic<Hierarchy*> hierarchyView_{nullptr};
  std::shared_ptr<bootstrap::Store> store_;
  std::shared_ptr<AbortHandle> abortHandle_;
  std::int64_t splits_ = 0;
  std::map<std::vector<int>, std::int64_t> subgroups_;
  bool yieldWhileSpinning_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  // Who may run next, and the next sequence number, in one word: a blocking call on an idle communicator takes both
  // with one compare-and-swap and no lock (run); everything else changes it under mu_, still by
  // compare-and-swap. Taking a sequence number and marking the communicator busy or queued in the same step keeps
  // calls running in the order of their numbers.
  static constexpr std::uint64_t kBusy = 1;    // a task is executing (inline or on the progress thread)
  static constexpr std::uint64_t kQueued = 2;  // queue_ holds tasks
  static constexpr std::uint64_t kSeqOne = 4;  // the next sequence number, from bit 2
  std::atomic<std::uint64_t> gate_{0};
  std::string broken_;  // set after an error that leaves the ranks out of step
  ErrorCode brokenCode_ = ErrorCode::kInternal;
  int brokenPeer_ = -1;  // the peer the PeerLost that set broken_ named (-1: none, or another error)
  std::atomic<bool> brokenFlag_{false};
  std::atomic<bool> aborted_{false};         // broken_ is set: read without the lock on every call
  std::atomic<bool> groupRunning_{false};    // executeGroup is running: queued point-to-point calls may join it
  std::atomic<bool> queuedForGroup_{false};  // a task that joins or interleaves was queued since the group last looked
  int pendingDeviceCalls_ = 0;               // queued device calls that are not detached: they may settle the engine
  std::optional<Error> detachedError_;       // the first failure of a detached call
  // Detached calls: the handoff (made at the first), and the lock that queues their tickets in issue order.
  std::mutex issueMu_;
  std::unique_ptr<device::StreamHandoff> handoff_;
  bool handoffTried_ = false;
  std::atomic<device::StreamHandoff*> handoffView_{nullptr};  // for abort() from any thread
  std::thread progress_;
};

}  // namespace braid::core
