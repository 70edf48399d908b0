/// braid: collective communication for host and GPU buffers.
///
/// A Communicator joins `size` ranks (processes, or threads in tests). Every collective takes plain pointers and
/// an element count; braid looks at each pointer to decide how to move it: host memory through the host engine,
/// device and managed memory through braid's GPU kernels (between the GPUs of one host) or staged through host
/// memory (elsewhere), ordered on CallOptions::stream.
///
/// Thread-safety contract
/// ----------------------
/// - Different communicators are independent: their calls may run concurrently from any threads.
/// - Calls on one communicator may come from any thread, but collectives must be issued in the same order on
///   every rank. braid serialises the calls of one communicator in the order they enter it (a call made while
///   another runs waits for it), so concurrent calls from several threads are safe but their order across
///   ranks is only deterministic if the caller makes it so.
/// - Async calls (`*Async`) are queued and run in issue order on the communicator's progress thread; a blocking
///   call issued after them runs after them. One exception: point-to-point calls on host buffers queued behind a
///   running point-to-point call join it and progress together, each completing on its own, and a collective on
///   host buffers queued behind them runs while they are pending (point-to-point calls never pass a collective).
///   Work objects may be waited on or tested from any thread.
/// - rank(), size() may be called at any time from any thread. Destroying a communicator while a call on it
///   runs in another thread is not allowed; destroy it after its Work has completed.
/// - Buffers passed to a call must stay valid until it returns (blocking) or its Work completes (async).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "braid/types.hpp"

namespace braid {

namespace core {
class CommunicatorImpl;
struct CommunicatorAccess;
struct WorkState;
}  // namespace core

/// Options of one call. The timeout defaults to BRAID_TIMEOUT.
struct CallOptions {
  std::chrono::milliseconds timeout{0};  ///< 0 = the communicator's default (BRAID_TIMEOUT)
  /// The CUDA stream (cudaStream_t) the call is ordered on.
  /// - Device (or managed) buffers: the operation is queued on this stream after the work already on it, and the
  ///   call returns without waiting for it (as NCCL's calls do); later work on the stream sees the result. Null is
  ///   the default stream; cudaStreamPerThread and cudaStreamLegacy work too. The NVLink kernels may be captured
  ///   into a CUDA graph.
  /// - Host buffers: when a stream is given, the operation starts after the work queued on it so far and the call
  ///   returns with the result in place. Null means no stream (no CUDA call is made for host buffers then).
  CUstream_st* stream = nullptr;
  /// Device buffers on a path whose host takes part in the call (staged through host memory: ranks on several
  /// hosts, processes or threads sharing a GPU, per-rank counts, point-to-point):
  /// - false: the call returns when its host part is done, and throws its errors.
  /// - true: the call returns at once, as a kernel's does (NCCL's promise, and what lets a watchdog time the call
  ///   from outside). The stream copies the inputs to host memory and waits; the host part runs on the
  ///   communicator's progress thread, in issue order; then the stream copies the results back. A failure there
  ///   is reported by asyncError() and fails every later call; the Work of an async form completes when the host
  ///   part ends. Bad arguments are still thrown by the call. Not capturable into a CUDA graph.
  /// Pass the same value on every rank. Calls whose kernels queue without their host have nothing to detach.
  bool streamAsync = false;
};

/// Completion handle of an asynchronous call.
class Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<core::WorkState> state) : state_(std::move(state)) {}
  /// `work` whose operation, a receive, writes the rank its message came from to `*source` before it completes.
  Work(Work work, std::shared_ptr<const int> source) : state_(std::move(work.state_)), source_(std::move(source)) {}

  /// True when the operation finished (successfully or not). Never blocks.
  bool test() const;
  /// Waits until the operation finishes; rethrows its braid::Error if it failed. Returns false if `timeout`
  /// passed first (the operation goes on). A timeout of zero waits without limit (the operation itself still
  /// fails with kTimeout after the communicator's BRAID_TIMEOUT).
  bool wait(std::chrono::milliseconds timeout = std::chrono::milliseconds{0}) const;
  /// Runs `callback` once the operation finished: with null on success, else with its braid::Error. It runs on the
  /// thread that finishes the operation (the communicator's progress thread), or at once on this thread when the
  /// operation already finished. It must not wait for calls of the same communicator (they are queued behind the
  /// one it is called from: a blocking call there fails with InvalidArgument); it may queue them. Any exception it
  /// throws is swallowed.
  void onCompletion(std::function<void(std::exception_ptr)> callback) const;
  bool valid() const { return state_ != nullptr; }
  /// For a receive (recvAsync) that completed successfully: the rank its message came from, which for kAnySource
  /// is known only then; -1 before it completes and for any other call.
  int source() const;

 private:
  std::shared_ptr<core::WorkState> state_;
  std::shared_ptr<const int> source_;
};

/// A buffer registered with a communicator (Communicator::registerBuffer). id 0: registering changed nothing.
struct BufferRegistration {
  std::uint64_t id = 0;
};

/// Where a buffer lives, as every call classifies it (the CUDA driver says; host memory where there is no driver).
enum class Memory { kHost, kDevice, kManaged };
Memory memoryOf(const void* ptr);
/// Whether braid reduces `type` with `kind` (no bitwise reductions of floating types, no arithmetic on bool).
bool reductionSupported(DataType type, ReduceKind kind);

/// 128 bytes to pass to every rank (like ncclUniqueId), made by rank 0's process with Communicator::uniqueId().
struct UniqueId {
  std::uint8_t bytes[128];
};

/// A key-value store the caller already has (torch.distributed's Store, a job scheduler's, ...), through which
/// Communicator::create(store, rank, size) finds its peers instead of starting a store of its own.
///
/// Keys and values are byte strings. braid only ever reads keys it or a peer set, and reads each at most a few
/// times; it writes a few keys per rank per communicator.
///
/// Thread-safety: implementations must be safe to call from several threads at once: each communicator calls its
/// store from the thread creating it, and several communicators (ranks as threads, or process groups) may be
/// created over one store at the same time. braid holds the shared_ptr for the communicator's lifetime.
///
/// Errors: throw any std::exception. braid reports it as a braid::Error of code kUnavailable, and a wait that
/// returns false as kTimeout, each naming the operation and the key.
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  /// Stores `value` under `key`, replacing any earlier value, and makes it visible to every rank's get and wait.
  virtual void set(const std::string& key, const std::string& value) = 0;
  /// The value under `key`, blocking until some rank has set it (braid calls get only after wait said it exists).
  virtual std::string get(const std::string& key) = 0;
  /// Blocks until every key in `keys` exists: true when they all do, false when `timeout` passed first. braid
  /// always passes a timeout of at least one millisecond (0 is never "forever" here).
  virtual bool wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  /// Atomically adds `delta` to the integer stored under `key` (0 when absent) and returns the new value. The
  /// integer is kept as its decimal text, so get(key) reads it back ("3"), as torch's stores do.
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
};

/// Aborts a communicator from another thread, also while it is being created (as ncclCommAbort on a communicator
/// still initialising): pass it to create() or fromEnvironment(), keep it, and call abort() at any time.
class AbortHandle {
 public:
  AbortHandle() = default;
  AbortHandle(const AbortHandle&) = delete;
  AbortHandle& operator=(const AbortHandle&) = delete;

  /// A creation in progress fails with kAborted within ~100 ms; a communicator already made with this handle is
  /// aborted (Communicator::abort). Thread-safe, idempotent, never blocks.
  void abort();
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

 private:
  friend struct core::CommunicatorAccess;  // creation waits on flag() and attaches the communicator it made
  const std::atomic<bool>* flag() const { return &aborted_; }
  /// The communicator made with the handle (null detaches); aborts it at once when the handle already fired.
  void attach(core::CommunicatorImpl* comm);

  std::atomic<bool> aborted_{false};
  std::mutex mu_;
  core::CommunicatorImpl* comm_ = nullptr;
};

class Communicator {
 public:
  /// Creates a communicator from the environment its launcher set, the first found of: `braid run` or explicit
  /// BRAID_RANK, BRAID_WORLD_SIZE, BRAID_ROOT_ADDR=HOST:PORT (rank 0 listens there; the others connect), optional
  /// BRAID_LOCAL_RANK and BRAID_TOKEN (a shared secret that authenticates the rendezvous); torchrun (RANK,
  /// WORLD_SIZE, MASTER_ADDR; rank 0 listens on MASTER_PORT + 1); Open MPI's mpirun (OMPI_COMM_WORLD_*; rank 0's
  /// address travels through PMIx); Slurm's srun (SLURM_PROCID, SLURM_NTASKS; rank 0 listens on the step's first
  /// host at BRAID_PORT). BRAID_ROOT_ADDR, when set, overrides the derived address. Blocks until every rank has
  /// joined or BRAID_TIMEOUT passes.
  static std::unique_ptr<Communicator> fromEnvironment();
  /// The same, abortable through `abort` from another thread while it runs and afterwards.
  static std::unique_ptr<Communicator> fromEnvironment(std::shared_ptr<AbortHandle> abort);
  /// True when a launcher started this process as one rank of a job (braid run, torchrun, mpirun, srun, or
  /// BRAID_RANK set by hand): fromEnvironment() then joins that job.
  static bool launchedByLauncher();
  /// Makes a fresh id and starts its rendezvous server in this process (which must outlive the creation).
  static UniqueId uniqueId();
  /// Creates a communicator from an id made by uniqueId() and passed to every rank.
  static std::unique_ptr<Communicator> create(const UniqueId& id, int rank, int size);
  /// The same, abortable through `abort` from another thread while it runs and afterwards.
  static std::unique_ptr<Communicator> create(const UniqueId& id, int rank, int size,
                                              std::shared_ptr<AbortHandle> abort);
  /// Creates a communicator whose ranks find each other through `store` (see KeyValueStore). Every rank passes a
  /// store over the same data, the same `size` and `prefix`, and its own `rank`. braid's keys all start with
  /// "<prefix>/<size>/<n>/", where n numbers the communicators of `size` ranks created under that prefix (a
  /// counter in the store): communicators created one after another over one store and prefix never share
  /// keys, but communicators of different rank sets created at the same time over one store need different
  /// prefixes (as torch gives each process group its own prefix store). Blocks until every rank has joined or
  /// BRAID_TIMEOUT passes.
  static std::unique_ptr<Communicator> create(std::shared_ptr<KeyValueStore> store, int rank, int size,
                                              const std::string& prefix = "braid");

  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  /// The sequence number the next collective will carry (starts at 0, +1 per call).
  std::int64_t sequenceNumber() const;
  /// Where the ranks run, learned at creation (ranks share a host when they share a boot id and a network
  /// namespace): the hosts this communicator spans; this rank's index among the ranks of its host and how many
  /// they are (as MPI_COMM_TYPE_SHARED's rank and size, or torchrun's LOCAL_RANK and LOCAL_WORLD_SIZE).
  int hostCount() const;
  int localRank() const;
  int localSize() const;
  /// The host `rank` runs on (numbered from 0 in the order of each host's lowest rank) and its name.
  /// InvalidArgument for a rank out of range.
  int hostOf(int rank) const;
  std::string hostName(int rank) const;
  /// What the communicator runs, in words for logs, tools and benchmark results. The transport between the ranks
  /// for buffers of `memory`: "shm", "tcp" or "memory" (thread ranks); for device buffers "cuda_ipc" where braid's
  /// GPU paths join them, else the host transport they are staged over ("" before the first call on device buffers).
  std::string transportName(Memory memory = Memory::kHost) const;
  /// The algorithm an allreduce of `bytes` on `memory` takes now: "shm/direct", "tcp/ring", "cuda_ipc/oneshot",
  /// "cuda_ipc/leader", "hierarchical (...)", ... ("" for device buffers before the first call on them).
  std::string allreduceAlgorithm(std::size_t bytes, Memory memory = Memory::kHost) const;
  /// Why an allreduce of `bytes` on `memory` takes that algorithm, in the selector's words: forced, measured or
  /// modelled, and the cost projected for each algorithm it considered ("" for device buffers before their first
  /// call). BRAID_LOG=info logs it for the first call of each size.
  std::string explain(std::size_t bytes, Memory memory = Memory::kHost) const;
  /// What joins this rank to its peers: "shared memory", "TCP over eth0, eth1 (4 streams per peer), 2 hosts", ...
  /// Call it from the thread that makes the calls.
  std::string linkDescription();
  /// This rank's last calls as JSON, oldest first (sequence number, collective, type, count, reduction, root,
  /// queued/running/done/failed, when issued, started and ended, the error): where each rank was when a job went
  /// wrong. BRAID_FLIGHT_RECORDER=PREFIX also writes it to PREFIX.rankR.json when a failure breaks the communicator.
  std::string flightRecord() const;

  // Collectives. `count` is in elements of `type`. send == recv (or recv == nullptr where noted) is in place; so are
  // the forms noted at allgather and reduceScatter. Send and recv ranges that overlap otherwise: kInvalidArgument.
  // Every rank must call the same collective with the same type, op and counts; braid checks and raises
  // kMismatch naming both sides when they disagree.

  /// recv[i] = op over ranks of send[i].
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, CallOptions = {});
  /// root's buf to every rank.
  void broadcast(void* buf, std::size_t count, DataType type, int root, CallOptions = {});
  /// recv (significant at root only) = op over ranks of send.
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root, CallOptions = {});
  /// recv = concatenation of every rank's send (count elements each); in place when send == recv + rank*count.
  void allgather(const void* send, void* recv, std::size_t count, DataType type, CallOptions = {});
  /// Like allgather with per-rank counts; rank r's block lands at recv + displs[r] elements. The blocks must not
  /// overlap (InvalidArgument): each element is written once.
  void allgatherv(const void* send, std::size_t sendCount, void* recv, const std::vector<std::size_t>& recvCounts,
                  const std::vector<std::size_t>& displs, DataType type, CallOptions = {});
  /// send holds size() blocks of recvCount elements; rank r receives block r reduced over ranks. In place when
  /// recv == send + rank*recvCount.
  void reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op, CallOptions = {});
  /// send block j (count elements) goes to rank j; recv block j comes from rank j.
  void alltoall(const void* send, void* recv, std::size_t count, DataType type, CallOptions = {});
  /// Per-peer counts and displacements (elements). The receive blocks must not overlap (InvalidArgument).
  void alltoallv(const void* send, const std::vector<std::size_t>& sendCounts,
                 const std::vector<std::size_t>& sendDispls, void* recv, const std::vector<std::size_t>& recvCounts,
                 const std::vector<std::size_t>& recvDispls, DataType type, CallOptions = {});
  /// root receives every rank's send (count each) in rank order.
  void gather(const void* send, void* recv, std::size_t count, DataType type, int root, CallOptions = {});
  /// root's send block r (count elements) goes to rank r.
  void scatter(const void* send, void* recv, std::size_t count, DataType type, int root, CallOptions = {});
  void barrier(CallOptions = {});

  /// Point-to-point, tagged; messages between a pair with the same tag arrive in order.
  void send(const void* buf, std::size_t count, DataType type, int peer, int tag = 0, CallOptions = {});
  /// Returns the rank the message came from: `peer`, or with kAnySource (host buffers) the first rank whose message
  /// with `tag` this rank took (messages of one sender still arrive in order).
  int recv(void* buf, std::size_t count, DataType type, int peer, int tag = 0, CallOptions = {});
  /// Posts all sends and receives together and completes them without deadlock in any order (as
  /// ncclGroupStart/End or torch's batch_isend_irecv).
  void group(const std::vector<P2pOp>& ops, CallOptions = {});

  /// Registers GPU memory [ptr, ptr + bytes) with the communicator (as ncclCommRegister). Collective: every rank
  /// registers one buffer of its own, in the same order relative to its collectives. Afterwards an allreduce,
  /// allgather or reduce_scatter of at least BRAID_CUDA_REGISTERED_MIN_BYTES whose buffers lie inside registrations
  /// on every rank reads its peers' buffers where they are instead of pushing them through braid's workspace
  /// (allreduce needs send and recv registered, the others send); other calls run as before, and a call whose
  /// buffers are registered on some ranks only falls back on all of them. The memory must stay allocated until
  /// deregisterBuffer or the communicator's destruction. Memory from cudaMalloc (and torch's allocator) and cuMem
  /// memory exportable as a POSIX fd can be registered; host or managed memory is refused (kInvalidArgument),
  /// naming the rank. Where braid's kernels do not run (ranks on several hosts) it is accepted and changes nothing.
  BufferRegistration registerBuffer(void* ptr, std::size_t bytes, CallOptions = {});
  /// Collective: forgets a registration on every rank, after this rank's device work that may read it finished.
  void deregisterBuffer(BufferRegistration registration, CallOptions = {});

  // Asynchronous forms: the same calls, queued in issue order on the communicator's progress thread. Vectors are
  // copied; buffers must stay valid until the Work completes.
  Work allreduceAsync(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, CallOptions = {});
  Work broadcastAsync(void* buf, std::size_t count, DataType type, int root, CallOptions = {});
  Work reduceAsync(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                   CallOptions = {});
  Work allgatherAsync(const void* send, void* recv, std::size_t count, DataType type, CallOptions = {});
  Work allgathervAsync(const void* send, std::size_t sendCount, void* recv, const std::vector<std::size_t>& recvCounts,
                       const std::vector<std::size_t>& displs, DataType type, CallOptions = {});
  Work reduceScatterAsync(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                          CallOptions = {});
  Work alltoallAsync(const void* send, void* recv, std::size_t count, DataType type, CallOptions = {});
  Work alltoallvAsync(const void* send, const std::vector<std::size_t>& sendCounts,
                      const std::vector<std::size_t>& sendDispls, void* recv,
                      const std::vector<std::size_t>& recvCounts, const std::vector<std::size_t>& recvDispls,
                      DataType type, CallOptions = {});
  Work gatherAsync(const void* send, void* recv, std::size_t count, DataType type, int root, CallOptions = {});
  Work scatterAsync(const void* send, void* recv, std::size_t count, DataType type, int root, CallOptions = {});
  Work barrierAsync(CallOptions = {});
  /// Point-to-point calls on host buffers posted while earlier ones run join them, and each completes on its own
  /// (as MPI_Isend/MPI_Irecv): any order of matching sends and receives between ranks completes. A collective on
  /// host buffers queued among them runs while they are pending, as MPI's does, moving their messages meanwhile:
  /// a receive whose matching send the peer posts after that collective completes. Point-to-point calls queued after
  /// it join once it ran. Device buffers run in issue order; a call whose peer reached a device collective queued
  /// behind it without posting the matching call before it can never complete: it fails with Mismatch within
  /// seconds, naming the peer and the collective, and the communicator breaks.
  Work groupAsync(std::vector<P2pOp> ops, CallOptions = {});
  Work sendAsync(const void* buf, std::size_t count, DataType type, int peer, int tag = 0, CallOptions = {});
  Work recvAsync(void* buf, std::size_t count, DataType type, int peer, int tag = 0, CallOptions = {});

  /// Ends this communicator on this rank, from any thread, at any time, without blocking (ncclCommAbort): calls
  /// running or queued fail with kAborted within milliseconds, later calls fail with kAborted, and the peers lose
  /// this rank (their waits on it fail with kPeerLost). The object must still be destroyed.
  void abort();
  /// A failure of device work that ran after its call returned, as ncclCommGetAsyncError reports it: a GPU kernel
  /// of this communicator gave up waiting for a peer (kPeerLost when the peer's process died, kTimeout after
  /// BRAID_TIMEOUT, kAborted after abort()). The next call raises it too. Any thread, never blocks.
  std::optional<Error> asyncError() const;

  // New communicators from this one. Each has its own sequence numbers and its own transport (shared memory when
  // its ranks share a host, else TCP), and may outlive this one.

  /// A negative color: the rank takes part in split() but joins no new communicator.
  static constexpr int kNoColor = -1;
  /// Collective over this communicator (MPI_Comm_split, ncclCommSplit): ranks passing the same color form a new
  /// communicator, ranked by (key, rank here); with kNoColor the rank gets nullptr. Every rank calls it at the same
  /// point of its calls: it exchanges colors and keys as an allgather of 2 int64 a rank (its errors name split).
  std::unique_ptr<Communicator> split(int color, int key);
  /// After a peer was lost (kPeerLost), every surviving rank calls shrink() (MPIX_Comm_shrink, ncclCommShrink): the
  /// survivors agree on who is gone and form a new communicator of themselves, ranked in their old order, which
  /// works whichever ranks died (rank 0 included). This communicator stays broken; destroy it.
  std::unique_ptr<Communicator> shrink();
  /// Only the listed ranks call it, each with the same list, whose order gives the new ranks (MPI_Comm_create_group);
  /// the other ranks go on. Members must make their subgroup calls in the same order. InvalidArgument when the list
  /// is empty, repeats a rank, names one out of range, or leaves out the caller; Timeout, saying so, when members
  /// passed different lists (they meet no one).
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& ranks);

 private:
  friend struct core::CommunicatorAccess;  // made only by braid itself (create, split, shrink, subgroup)
  explicit Communicator(std::unique_ptr<core::CommunicatorImpl> impl);

  std::unique_ptr<core::CommunicatorImpl> impl_;
};

}  // namespace braid
