#include "core/communicator_impl.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <mutex>
#include <optional>

#include "base/data_type.hpp"
#include "base/error.hpp"
#include "base/logging.hpp"
#include "base/threads.hpp"
#include "core/communicator_access.hpp"
#include "core/record_signal.hpp"
#include "core/this_host.hpp"
#include "core/work_state.hpp"
#include "topology/topology.hpp"
#include "transport/host_identity.hpp"
#include "tuning/hierarchy.hpp"

namespace braid::core {

const topology::Topology& thisHost() {
  static const topology::Topology host = topology::detectHost("");
  return host;
}

namespace {

// Errors after which ranks may be at different rounds: the communicator cannot be used again.
bool leavesRanksOutOfStep(ErrorCode code) {
  return code == ErrorCode::kTimeout || code == ErrorCode::kPeerLost || code == ErrorCode::kAborted ||
         code == ErrorCode::kInternal;
}

}  // namespace

CommunicatorImpl::CommunicatorImpl(int rank, int size, std::unique_ptr<transport::LocalGroup> group, Settings settings,
                                   std::shared_ptr<void> keepAlive, HostLayout host)
    : CommunicatorImpl(rank, size, makeLocalEngine(size, std::move(group), settings, host), settings,
                       std::move(keepAlive), host) {}

CommunicatorImpl::CommunicatorImpl(int rank, int size, std::unique_ptr<Engine> engine, Settings settings,
                                   std::shared_ptr<void> keepAlive, HostLayout host)
    : rank_(rank),
      size_(size),
      settings_(std::move(settings)),
      engines_(rank, size, std::move(engine), settings_),
      keepAlive_(std::move(keepAlive)),
      // Oversubscribed: more ranks on this host than the CPUs they may use (ranks on other hosts take none).
      yieldWhileSpinning_(outnumbersItsCpus(orThisProcess(host, size))) {
  setLogLevel(settings_.logLevel);
  if (!settings_.trace.empty()) recorder_.startTrace(kMostTraceEvents);
  if (!settings_.flightRecorderSignal.empty()) {
    if (settings_.flightRecorder.empty()) {
      fail(ErrorCode::kInvalidArgument, {.rank = rank_, .peer = -1, .op = "create", .seq = -1},
           "BRAID_FLIGHT_RECORDER_SIGNAL needs BRAID_FLIGHT_RECORDER=PREFIX: the place the records are written to");
    }
    armRecordSignal(settings_.flightRecorderSignal);
    registerForRecordSignal(this);
  }
  placement_ = Placement::of(
      std::vector<RankHost>(static_cast<std::size_t>(size_), RankHost{"", transport::hostName(), {}}), rank_);
  if (logEnabled(LogLevel::kInfo)) {
    logLine(LogLevel::kInfo, rank_,
            strCat("communicator of ", size_, " ranks over ", engines_.host().transportName(),
                   yieldWhileSpinning_ ? ", ranks outnumber cores: yielding waits" : ""));
  }
}

void CommunicatorImpl::attachPlacement(Placement placement) {
  placement_ = std::move(placement);
  hierarchyFits_ = Hierarchy::fits(placement_);
  if (logEnabled(LogLevel::kInfo)) {
    logLine(LogLevel::kInfo, rank_,
            strCat("on host ", placement_.hostNames[static_cast<std::size_t>(placement_.hostOf[rank_])], " (",
                   placement_.hostOf[rank_] + 1, " of ", placement_.hosts(), "), local rank ", placement_.localRank,
                   " of ", placement_.localSize));
  }
}

CommunicatorImpl::~CommunicatorImpl() {
  unregisterForRecordSignal(this);
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (progress_.joinable()) progress_.join();
  // Every detached call has ended and released its stream: the handoff waits for their copies back.
  handoffView_.store(nullptr, std::memory_order_release);
  handoff_.reset();
  // Detached only now: while the destructor waited for a queued call, the handle could still abort it.
  if (abortHandle_) CommunicatorAccess::attach(*abortHandle_, nullptr);
  if (!settings_.trace.empty()) writeTrace();
}

void CommunicatorImpl::writeTrace() const {
  static std::atomic<int> communicators{0};
  const std::string path =
      strCat(settings_.trace, ".rank", rank_, ".", ::getpid(), "-", communicators.fetch_add(1), ".json");
  if (std::FILE* f = std::fopen(path.c_str(), "w")) {
    const std::string text = recorder_.chromeTrace(rank_);
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) == 0 && ok) return;
  }
  logLine(LogLevel::kWarn, rank_, strCat("could not write the trace to ", path));
}

void CommunicatorImpl::allreduce(const Route& route, const void* send, void* recv, std::size_t count, DataType type,
                                 ReduceOp op, const OpEnv& env) {
  // The same answer on every rank: the placement, the size and the settings are the same everywhere (not the
  // buffers' kind: each level routes them to its own engines, GPU ones to its kernels or windows)...
  const bool fits = Hierarchy::composes(op) && hierarchyFits_;
  const bool chooses = fits && settings_.hierarchy != "on" && settings_.hierarchy != "off";
  // ...as long as the ranks' counts match. Where they do not and fall on both sides of the crossover, some ranks
  // wait in the hierarchy's levels and the others on the flat path, each for ranks that never come: that ends at the
  // timeout, which then says so.
  const auto timedOut = [&](const Error& e) {
    return Error(
        e.code(),
        strCat(e.message(), " (if the ranks called this allreduce with different counts, some of them below ",
               settings_.hierarchyMinBytes, " B, BRAID_HIERARCHY_MIN_BYTES, and some not, they took the flat and ",
               "the hierarchical path apart: a mismatch ends this way here)"),
        e.context());
  };
  if (fits && tuning::useHierarchy(count * dataTypeSize(type), settings_)) {
    try {
      if (!hierarchy_) {
        hierarchy_ = Hierarchy::make(*this, env);
        hierarchyView_.store(hierarchy_.get(), std::memory_order_release);
        if (aborted_.load(std::memory_order_acquire)) hierarchy_->abort();
      }
      hierarchy_->allreduce(route, send, recv, count, type, op, env);
    } catch (const Error& e) {
      const Error told = chooses && e.code() == ErrorCode::kTimeout ? timedOut(e) : e;
      // Whatever failed in a step, the hierarchy closed its levels and its peers learned it as a lost peer: this
      // rank is out of step with them too, even where the error itself (a mismatch) would leave a flat communicator
      // usable.
      if (hierarchy_) breakWith(told);
      throw told;
    }
    return;
  }
  if (logEnabled(LogLevel::kInfo) && !route.device) logChoice(count * dataTypeSize(type));
  try {
    engineFor(route, env).allreduce(send, recv, count, type, op, env);
  } catch (const Error& e) {
    if (!chooses || e.code() != ErrorCode::kTimeout) throw;
    throw timedOut(e);
  }
}

// Once per power of two of sizes: the selector's reasoning, so that a log shows what ran and why without a line per
// call. Calls run one at a time, so the mask needs no lock.
void CommunicatorImpl::logChoice(std::size_t bytes) {
  int bucket = 0;
  while (bucket < 63 && (std::size_t{1} << bucket) < bytes) ++bucket;
  if ((loggedSizes_ >> bucket) & 1U) return;
  loggedSizes_ |= std::uint64_t{1} << bucket;
  logLine(LogLevel::kInfo, rank_, explainAllreduce(bytes));
}

std::optional<Error> CommunicatorImpl::asyncError() const {
  {
    std::lock_guard lock(mu_);
    if (detachedError_) return detachedError_;
  }
  const CallContext ctx{.rank = rank_, .peer = -1, .op = "async", .seq = -1};
  if (std::optional<Error> e = engines_.asyncError(ctx)) return e;
  // The hierarchical allreduce's levels run GPU work of their own.
  const Hierarchy* hierarchy = hierarchyView_.load(std::memory_order_acquire);
  return hierarchy ? hierarchy->asyncError(ctx) : std::nullopt;
}

std::int64_t CommunicatorImpl::sequenceNumber() const {
  return static_cast<std::int64_t>(gate_.load(std::memory_order_acquire) / kSeqOne);
}

std::string CommunicatorImpl::allreduceAlgorithm(std::size_t bytes) const {
  if (hierarchyFits_ && tuning::useHierarchy(bytes, settings_)) {
    if (const Hierarchy* h = hierarchyView_.load(std::memory_order_acquire)) return h->describe(bytes);
    return "hierarchical (inside hosts, then between them; set up at the first such call)";
  }
  return strCat(engines_.host().transportName(), "/", engines_.host().allreduceAlgorithm(bytes));
}

std::string CommunicatorImpl::explainAllreduce(std::size_t bytes) const {
  if (hierarchyFits_ && tuning::useHierarchy(bytes, settings_)) {
    return strCat("allreduce of ", bytes, " B over ", size_, " ranks on ", placement_.hosts(), " hosts of ",
                  placement_.localSize, ": ", allreduceAlgorithm(bytes), ": each rank sends 1/", placement_.localSize,
                  " of the message between hosts (BRAID_HIERARCHY=", settings_.hierarchy, ", from ",
                  settings_.hierarchyMinBytes, " B, BRAID_HIERARCHY_MIN_BYTES)");
  }
  return strCat("allreduce of ", bytes, " B over ", size_, " ranks (", engines_.host().transportName(),
                "): ", engines_.host().explainAllreduce(bytes));
}

OpEnv CommunicatorImpl::makeEnv(const char* op, std::int64_t seq, const CallOptions& opts) const {
  // Built in place, field by field: every call makes one, and an assigned ErrorContext costs a copy and a stall.
  return OpEnv{
      .context = {.rank = rank_, .peer = -1, .op = op, .seq = seq},
      .timeoutSeconds = opts.timeout.count() > 0 ? opts.timeout.count() / 1000.0 : settings_.timeoutSeconds,
      .deadline = std::nullopt,
      // Oversubscribed ranks spin briefly: a spinning rank holds the core its peer needs to make progress.
      .spinMicros = yieldWhileSpinning_ ? std::min(settings_.spinMicros, 5L) : settings_.spinMicros,
      .yieldWhileSpinning = yieldWhileSpinning_,
      .check = {},
      .aborted = &aborted_,
      .stream = opts.stream,
  };
}

void CommunicatorImpl::throwIfBroken(const CallContext& ctx) const {
  if (!brokenFlag_.load(std::memory_order_acquire)) return;  // the common case takes no lock
  std::lock_guard lock(mu_);
  if (broken_.empty()) return;
  ErrorContext named = ctx;  // its fields name the peer an earlier PeerLost named, as its text does
  if (named.peer < 0) named.peer = brokenPeer_;
  fail(brokenCode_, named, "communicator is unusable after an earlier failure: ", broken_);
}

void CommunicatorImpl::attachAbortHandle(std::shared_ptr<AbortHandle> handle) {
  abortHandle_ = std::move(handle);
  CommunicatorAccess::attach(*abortHandle_, this);  // aborts at once when the handle fired while this was being made
}

void CommunicatorImpl::abort() {
  if (aborted_.exchange(true, std::memory_order_acq_rel)) return;
  {
    std::lock_guard lock(mu_);
    broken_ = "the communicator was aborted";
    brokenCode_ = ErrorCode::kAborted;
    brokenPeer_ = -1;
    brokenFlag_.store(true, std::memory_order_release);
  }
  dumpFlightRecord("the communicator was aborted");
  // Streams held for detached calls go on now; those calls end with Aborted on the progress thread.
  if (device::StreamHandoff* handoff = handoffView_.load(std::memory_order_acquire)) handoff->releaseAll();
  engines_.abort();
  if (Hierarchy* hierarchy = hierarchyView_.load(std::memory_order_acquire)) hierarchy->abort();
  cv_.notify_all();
}

void CommunicatorImpl::noteFailure(const Error& e) {
  // Every rank fails a mismatched call together, so the communicator goes on; the record shows what each called.
  if (e.code() == ErrorCode::kMismatch) dumpFlightRecord(e.what());
  if (leavesRanksOutOfStep(e.code())) breakWith(e);
}

void CommunicatorImpl::breakWith(const Error& e) {
  bool first = false;
  {
    std::lock_guard lock(mu_);
    if (broken_.empty()) {
      broken_ = e.what();
      // Aborted and Mismatch (calls that could not meet) read as what they were; a timeout or an internal error
      // leaves the ranks apart, as a lost peer does.
      brokenCode_ =
          e.code() == ErrorCode::kAborted || e.code() == ErrorCode::kMismatch ? e.code() : ErrorCode::kPeerLost;
      // Only a peer that is lost: later errors read PeerLost, and a peer that merely timed out may be alive.
      brokenPeer_ = e.code() == ErrorCode::kPeerLost ? e.context().peer : -1;
      brokenFlag_.store(true, std::memory_order_release);
      first = true;
    }
  }
  if (first) announceBroken(e);
}

void CommunicatorImpl::announceBroken(const Error& e) {
  dumpFlightRecord(e.what());
  // Over shared memory a peer that arrives late would otherwise finish the call this rank failed, or wait out its
  // timeout for a rank that makes no more calls. (The device engine shares the host engine's fabric.)
  engines_.tellPeersBroken(e.context().seq, e.code());
}

void CommunicatorImpl::rejectRound(const OpEnv& env) {
  try {
    engines_.host().reject(env);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kMismatch) throw;  // the peers' Mismatch is expected; anything else is news
  }
}

std::int64_t CommunicatorImpl::takeGate(bool collective, std::uint64_t flags, bool ifIdle) {
  std::uint64_t g = gate_.load(std::memory_order_acquire);
  while (!(ifIdle && (g & (kBusy | kQueued)) != 0)) {
    if (gate_.compare_exchange_weak(g, (collective ? g + kSeqOne : g) | flags, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      return collective ? static_cast<std::int64_t>(g / kSeqOne) : -1;
    }
  }
  return kQueueIt;
}

void CommunicatorImpl::release() {
  // Queued tasks wait for the progress thread, which waits for this: wake it (under the lock it waits with, so the
  // wake-up cannot fall between its look at the gate and its sleep).
  if ((gate_.fetch_and(~kBusy, std::memory_order_acq_rel) & kQueued) != 0) {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }
}

void CommunicatorImpl::execute(Task& task, bool mayFeed, FunctionRef<void()> alongside) {
  if (mayFeed && task.p2p) {
    executeGroup(task);
    return;
  }
  OpEnv env = makeEnv(task.op, task.seq, task.opts);
  if (alongside) {
    env.check = [alongside] { alongside(); };
    env.sliceMicros = kAlongsideSliceMicros;
  }
  std::exception_ptr error;
  try {
    throwIfBroken(env.context);
    task.body(env);
    noteEnded(task.record, task.seq, nullptr);
  } catch (const Error& e) {
    const Error told = withPeerProgress(e);
    error = std::make_exception_ptr(told);
    noteEnded(task.record, task.seq, &told);
    noteFailure(told);
  } catch (...) {
    error = std::current_exception();
    const Error unexpected(ErrorCode::kInternal, "unexpected exception");
    noteEnded(task.record, task.seq, &unexpected);
    noteFailure(unexpected);
  }
  if (task.releases != 0) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const Error& e) {
        noteDetachedFailure(e);
      } catch (...) {
        noteDetachedFailure(Error(ErrorCode::kInternal, "unexpected exception", env.context));
      }
    }
    // After the failure is noted: the caller's stream goes on, and whoever looks next sees the error.
    handoff_->release(task.releases);
  }
  task.work->finish(error);
}

bool CommunicatorImpl::detaches(const void* gpu, const char* op, std::size_t bytes) {
  {
    // Decided from the calls issued before this one, so that every rank decides alike: device calls still queued
    // may connect the device engine or settle its path first.
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return pendingDeviceCalls_ == 0 || stopping_; });
  }
  std::optional<bool> holds;
  if (const Engine* device = engines_.device()) {
    holds = device->holdsCaller(op, bytes);
  } else if (localGroup() == nullptr) {
    holds = true;  // ranks over the network: device buffers are always staged through host memory
  }
  if (!holds.value_or(false)) return false;
  std::lock_guard order(issueMu_);
  if (!handoff_ && !handoffTried_) {
    handoffTried_ = true;
    handoff_ = device::makeStreamHandoff(deviceOfPointer(gpu), rank_);
    handoffView_.store(handoff_.get(), std::memory_order_release);
  }
  return handoff_ != nullptr;
}

std::shared_ptr<WorkState> CommunicatorImpl::detachChecked(const char* op, bool collective, const CallInfo& info,
                                                           std::span<const DeviceExtent> extents,
                                                           const OnCopies& onCopies, const CallOptions& opts) {
  const CallContext ctx{.rank = rank_, .peer = -1, .op = op, .seq = -1};
  // One ticket at a time, queued in the order of the tickets: they are released in that order.
  std::lock_guard order(issueMu_);
  device::StreamHandoff::Ticket ticket = handoff_->issue(extents, opts.stream, ctx);
  Call onHost = onCopies(ticket.copies);
  const std::uint64_t number = ticket.number;
  Body body = [this, ticket = std::move(ticket), hostBody = std::move(onHost.body)](const OpEnv& env) {
    if (ticket.failure) throw *ticket.failure;
    handoff_->awaitInputs(ticket, env);
    hostBody(env);
  };
  CallOptions onProgressThread = opts;
  onProgressThread.stream = nullptr;  // the host part waits for its inputs itself
  onProgressThread.streamAsync = false;
  return enqueue(Call{op, nullptr, std::move(body), collective, info, nullptr, nullptr}, onProgressThread, false,
                 number);
}

void CommunicatorImpl::noteDetachedFailure(const Error& e) {
  bool first = false;
  {
    std::lock_guard lock(mu_);
    if (!detachedError_) detachedError_ = e;
    if (broken_.empty()) {
      broken_ = strCat("a call that ran apart from its caller failed: ", e.what());
      brokenCode_ = e.code();
      brokenPeer_ = e.code() == ErrorCode::kPeerLost ? e.context().peer : -1;
      brokenFlag_.store(true, std::memory_order_release);
      first = true;
    }
  }
  if (first) announceBroken(e);
}

Error CommunicatorImpl::withPeerProgress(const Error& e) const {
  const ErrorContext& ctx = e.context();
  if (e.code() != ErrorCode::kTimeout || ctx.peer < 0 || ctx.seq < 0) return e;
  for (const transport::PeerProgress& p : engines_.host().peerProgress()) {
    if (p.peer != ctx.peer || p.ageSeconds < 0) continue;
    const transport::Progress& at = p.progress;
    std::string where;
    if (at.seq < 0) {
      where = strCat("peer ", p.peer, " has begun no collective yet");
    } else if (at.seq < ctx.seq) {
      where = strCat("peer ", p.peer, " is ", ctx.seq - at.seq, " collective", ctx.seq - at.seq > 1 ? "s" : "",
                     " behind: it last began #", at.seq, at.running ? " and is still in it" : " and has finished it");
    } else if (at.seq == ctx.seq) {
      where = strCat("peer ", p.peer, at.running ? " is in this call too" : " has finished this call");
    } else {
      where = strCat("peer ", p.peer, " is ahead, in #", at.seq);
    }
    // Over TCP the news is as old as the peer's last heartbeat or the first frame of its latest call.
    if (p.ageSeconds >= 0.05) where += strCat(" (as of ", static_cast<long>(p.ageSeconds * 1000), " ms ago)");
    return Error(e.code(), strCat(e.message(), "; ", where), ctx);
  }
  return e;
}

std::string CommunicatorImpl::flightRecord() const {
  const std::vector<transport::PeerProgress> peers = engines_.host().peerProgress();
  std::lock_guard lock(mu_);  // the queue, and no task moving from it into the ring meanwhile
  std::vector<QueuedCall> queued;
  queued.reserve(queue_.size());
  for (const Task& t : queue_) queued.push_back({t.op, t.seq, t.info, t.issuedNs});
  return recorder_.json(rank_, size_, peers, queued);
}

void CommunicatorImpl::dumpFlightRecord(const std::string& why) const {
  if (settings_.flightRecorder.empty()) return;
  const std::string path = strCat(settings_.flightRecorder, ".rank", rank_, ".json");
  if (std::FILE* f = std::fopen(path.c_str(), "w")) {
    const std::string text = flightRecord();
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    std::fclose(f);
    if (ok) {
      logLine(LogLevel::kWarn, rank_, strCat("flight record written to ", path, " (", why, ")"));
      return;
    }
  }
  logLine(LogLevel::kWarn, rank_, strCat("could not write the flight record to ", path, " (", why, ")"));
}

std::shared_ptr<WorkState> CommunicatorImpl::enqueue(Call call, const CallOptions& opts, bool mayRunInline,
                                                     std::uint64_t releases) {
  auto work = std::make_shared<WorkState>();
  const bool collective = call.collective;
  std::unique_lock lock(mu_);
  // Only collectives take a sequence number: point-to-point calls differ between ranks by nature. The call runs here
  // when the communicator is idle and the caller waits for it anyway; else it is queued.
  std::int64_t seq = mayRunInline ? takeGate(collective, kBusy, true) : kQueueIt;
  const bool runsInline = seq != kQueueIt;
  if (!runsInline) seq = takeGate(collective, kQueued, false);
  Task task{seq, call.op, opts,     std::move(call.body), work, call.info, recorder_.now(),
            0,   nullptr, releases, call.gpu != nullptr};
  // Groups on the call's stream wait for it first; they run in issue order.
  if (opts.stream == nullptr) task.p2p = std::move(call.p2p);
  if (call.check) {
    const CallContext ctx{.rank = rank_, .peer = -1, .op = call.op, .seq = task.seq};
    try {
      call.check(ctx);
    } catch (const Error&) {
      // Still meet the peers for one round (in issue order), then report this rank's own error.
      const std::exception_ptr argumentError = std::current_exception();
      task.body = [this, argumentError, collective](const OpEnv& env) {
        if (collective) rejectRound(env);
        std::rethrow_exception(argumentError);
      };
      task.p2p = nullptr;
    }
  }
  if (runsInline) {
    noteStarted(task);
    lock.unlock();
    execute(task, false);  // a blocking caller returns when its own call is done: nothing joins it
    release();
    return work;
  }
  const bool forGroup = task.p2p != nullptr || task.interleaves();
  if (task.device) ++pendingDeviceCalls_;
  queue_.push_back(std::move(task));
  if (!progress_.joinable()) progress_ = startThread("the communicator's progress thread", [this] { progressLoop(); });
  cv_.notify_all();
  if (forGroup) {
    queuedForGroup_.store(true, std::memory_order_seq_cst);
    lock.unlock();
    // A running group asleep in its wait looks now rather than a sleep slice later.
    if (groupRunning_.load(std::memory_order_seq_cst)) engines_.host().wakePointToPoint();
  }
  return work;
}

namespace {
// The communicator whose progress thread this is (null on every other thread).
thread_local const CommunicatorImpl* progressOf = nullptr;
}  // namespace

bool CommunicatorImpl::onItsProgressThread() const { return progressOf == this; }

void CommunicatorImpl::progressLoop() {
  progressOf = this;
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock,
             [this] { return stopping_ || (!queue_.empty() && (gate_.load(std::memory_order_acquire) & kBusy) == 0); });
    if (queue_.empty()) {
      if (stopping_) return;
      continue;
    }
    Task task = std::move(queue_.front());
    queue_.pop_front();
    // Nothing else takes the gate meanwhile: the queue was not empty (no inline call starts), and mu_ is held.
    const std::uint64_t drained = queue_.empty() ? kQueued : 0;
    std::uint64_t g = gate_.load(std::memory_order_acquire);
    while (
        !gate_.compare_exchange_weak(g, (g | kBusy) & ~drained, std::memory_order_acq_rel, std::memory_order_acquire)) {
    }
    noteStarted(task);
    lock.unlock();
    execute(task, true);
    lock.lock();
    if (task.device) --pendingDeviceCalls_;
    gate_.fetch_and(~kBusy, std::memory_order_acq_rel);
    cv_.notify_all();
  }
}

}  // namespace braid::core
