#include "algorithms/device/device_engine.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <string_view>
#include <tuple>

#include "algorithms/device/call_stream.hpp"
#include "algorithms/device/device_scope.hpp"
#include "base/data_type.hpp"
#include "base/elementwise_op.hpp"
#include "base/error.hpp"
#include "base/logging.hpp"
#include "base/threads.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_reduce.hpp"
#include "cuda/runtime/driver_api.hpp"
#include "cuda/runtime/stream_writes.hpp"

namespace braid::device {

namespace {

using cuda::checkCuda;
using cuda::kernels::CollectiveKind;
using cuda::kernels::CollectiveParams;
using cuda::kernels::DeviceOp;
using cuda::kernels::KernelFailure;

WorkspaceMemory workspaceMemory(const Settings& settings, const OpEnv& env) {
  if (settings.cudaMemory.empty() || settings.cudaMemory == "auto") return WorkspaceMemory::kAuto;
  if (settings.cudaMemory == "vmm") return WorkspaceMemory::kVmm;
  if (settings.cudaMemory == "ipc") return WorkspaceMemory::kIpc;
  fail(ErrorCode::kInvalidArgument, env.context, "BRAID_CUDA_MEMORY='", settings.cudaMemory,
       "' is not one of auto, vmm, ipc");
}

}  // namespace

std::unique_ptr<Engine> makeDeviceEngine(Engine& host, int rank, int size, const Settings& settings, bool oneHost,
                                         DevicePolicy policy, int device, const std::string& sharedGpu) {
  auto engine = std::make_unique<DeviceEngine>(host, rank, size, settings, std::move(policy), device, oneHost);
  if (!oneHost && !sharedGpu.empty() && gpuIdentity(device) == sharedGpu) engine->shareGpuAcrossHosts();
  return engine;
}

DeviceEngine::DeviceEngine(Engine& host, int rank, int size, const Settings& settings, DevicePolicy policy, int device,
                           bool kernels)
    : host_(host),
      staging_(host, size, settings.netStagingWindowBytes, settings.netStagingReduce == "gpu"),
      rank_(rank),
      size_(size),
      settings_(settings),
      policy_(std::move(policy)),
      device_(device) {
  if (settings_.cudaTimeline != 0) timeline_ = std::make_unique<KernelTimeline>(rank);
  if (!kernels) {
    tried_ = true;
    noChannelWhy_ = "the ranks span several hosts: braid's kernels reach only the GPUs of one host";
  }
}

void DeviceEngine::shareGpuAcrossHosts() {
  staging_.useStreamWrites(true);
  logLine(LogLevel::kInfo, rank_,
          strCat("this rank's GPU is shared with ranks of other hosts on this machine (BRAID_HOST_ID or network "
                 "namespaces): staged results of up to ",
                 cuda::kStreamWriteMaxBytes, " bytes go back by value writes, not copies"));
}

DeviceEngine::~DeviceEngine() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  if (channel_ && haveLast_) {
    // The workspace must outlive this rank's queued kernels. The caller's stream may be gone by now, so wait for
    // the device; the kernels end by themselves (every wait is bounded), but a peer that is gone could hold them
    // until the timeout: after a grace period, make them give up.
    DeviceScope scope(device_);
    std::atomic<bool> idle{false};
    std::thread waiter([&] {
      (void)cudaSetDevice(device_);
      (void)cudaDeviceSynchronize();
      idle.store(true);
    });
    const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!idle.load()) {
      if (std::chrono::steady_clock::now() > grace) {
        channel_->raiseAbort();
        if (shared_) shared_->release();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    waiter.join();
    (void)cudaGetLastError();
  }
  if (join_ != nullptr) (void)cudaEventDestroy(join_);
  if (scratch_ != nullptr) (void)cudaFree(scratch_);
  channelView_.store(nullptr, std::memory_order_release);
  shared_.reset();
  channel_.reset();
}

const char* DeviceEngine::transportName() const { return channel_ ? "cuda_ipc" : host_.transportName(); }

std::string DeviceEngine::allreduceAlgorithm(std::size_t bytes) const {
  const tuning::AlgorithmDescriptor& a = policy_.allreduce(bytes, facts(), links());
  if (a.id == tuning::Algorithm::kGpuStaged) return staging_.allreduceAlgorithm(bytes);
  // Ranks on one GPU: each co-located path has a name of its own for whoever reads it.
  if (a.id == tuning::Algorithm::kGpuShared && shared_) return strCat("cuda_ipc/", shared_->algorithm());
  return strCat("cuda_ipc/", a.name);
}

std::optional<bool> DeviceEngine::holdsCaller(const char* op, std::size_t bytes) const {
  // Per-rank counts and point-to-point are always staged; every other call runs braid's kernels where a channel
  // is connected, unless the ranks share a GPU (the shared and leader paths meet on the host) or the policy stages
  // a small allreduce.
  const std::string_view name(op);
  if (name == "allgatherv" || name == "alltoallv" || name == "p2p" || name == "barrier") return true;
  if (!tried_) return std::nullopt;
  if (!channel_ || sharedPath_) return true;
  if (name != "allreduce") return false;
  return policy_
             .allreduce(bytes, DeviceFacts{.channel = true, .shared = false, .processes = stagesSmallCalls()}, links())
             .id == tuning::Algorithm::kGpuStaged;
}

std::string DeviceEngine::explainAllreduce(std::size_t bytes) const {
  std::string text = policy_.explain(bytes, facts(), links());
  if (shared_ && sharedPath_ && !text.starts_with("staged")) text += strCat(" (", shared_->name(), ")");
  if (!channel_ && tried_) text += strCat(" (", noChannelWhy_, ")");
  if (channel_ && !channel_->sharing().empty()) text += strCat(" [", channel_->sharing(), "]");
  return text;
}

bool DeviceEngine::agreeOnSharedPath(const OpEnv& env) {
  // Each rank decides from its own environment (BRAID_CUDA_SHARED_GPU, BRAID_ALGO, whether it sees an MPS server);
  // ranks on different paths would wait for each other forever, so they trade their answers and take the shared
  // path only if all chose it. A rank whose settings are invalid makes every rank fail alike.
  std::uint8_t mine = 0;  // 0: kernels, 1: shared path, 2: invalid settings
  std::string invalid;
  try {
    mine = policy_.sharedPath(!channel_->sharing().empty()) ? 1 : 0;
  } catch (const Error& e) {
    mine = 2;
    invalid = e.message();
  }
  std::vector<std::uint8_t> all(static_cast<std::size_t>(size_));
  host_.allgather(&mine, all.data(), 1, DataType::kUint8, env);
  for (int r = 0; r < size_; ++r) {
    if (all[static_cast<std::size_t>(r)] != 2) continue;
    fail(ErrorCode::kInvalidArgument, env.context, "rank ", r, " cannot choose a path for ranks that share a GPU",
         r == rank_ ? strCat(": ", invalid) : std::string(" (its log names the setting)"));
  }
  const bool every = std::all_of(all.begin(), all.end(), [](std::uint8_t v) { return v == 1; });
  if (!every && std::any_of(all.begin(), all.end(), [](std::uint8_t v) { return v == 1; })) {
    logLine(LogLevel::kWarn, rank_,
            "ranks disagree on the shared-GPU path (BRAID_CUDA_SHARED_GPU or BRAID_ALGO differ between them, or an "
            "MPS server is seen by some only): every rank runs braid's collective kernels");
  }
  return every;
}

bool DeviceEngine::kernelsReady(const OpEnv& env) {
  if (!tried_) {
    tried_ = true;
    if (device_ < 0) checkCuda(cudaGetDevice(&device_), "cudaGetDevice");
    std::size_t slot = settings_.cudaWorkspaceBytes / (2 * static_cast<std::size_t>(size_ + 1));
    slot = slot / 4096 * 4096;
    if (slot < 64 * 1024) {
      noChannelWhy_ = strCat("BRAID_CUDA_WORKSPACE_BYTES=", settings_.cudaWorkspaceBytes, " is too small");
    } else {
      try {
        channel_ = DeviceChannel::connect(host_, rank_, size_, device_, slot, workspaceMemory(settings_, env), env,
                                          &noChannelWhy_);
        if (channel_) {
          staging_.useStreamWrites(channel_->processesShareGpu());
          sharedPath_ = agreeOnSharedPath(env);
          // Threads of one process on one GPU read each other's buffers in place; processes of one GPU leave the
          // work to one of them; other layouts publish pieces.
          if (sharedPath_ && channel_->oneContext()) {
            shared_ = std::make_unique<OneContextCollectives>(host_, rank_, size_, env);
          } else if (sharedPath_ && channel_->processesOnOneGpu() && LeaderCollectives::supported()) {
            shared_ = std::make_unique<LeaderCollectives>(host_, *channel_, rank_, size_);
          } else {
            shared_ = std::make_unique<SharedGpuCollectives>(host_, *channel_, rank_, size_);
          }
        }
      } catch (...) {
        // The call failed as a whole (a peer rejected it, a peer was lost): connect again at the next device call,
        // as every rank will; a rank that never got here makes its first attempt then.
        shared_.reset();
        channel_.reset();
        tried_ = false;
        throw;
      }
      channelView_.store(channel_.get(), std::memory_order_release);
    }
    if (channel_) {
      logLine(LogLevel::kInfo, rank_,
              strCat("cuda_ipc: GPU ", device_, " joined ", size_, " ranks on ", channel_->links().gpus,
                     " GPU(s) over ", channel_->nvlink() ? "NVLink" : "PCIe or a shared GPU",
                     channel_->links().generation > 0 ? strCat(" generation ", channel_->links().generation) : "", ", ",
                     slot, "-byte slots, ", channel_->memoryName(), " workspace"));
      const bool shares = !channel_->sharing().empty();
      if (shares) {
        logLine(LogLevel::kInfo, rank_,
                strCat("cuda_ipc: ", channel_->sharing(),
                       sharedPath_
                           ? strCat(": ", shared_->name(), ", no kernel waits for another rank's")
                           : std::string(
                                 ": braid's collective kernels (an MPS server, BRAID_CUDA_SHARED_GPU or BRAID_ALGO)")));
      }
      cudaEvent_t join = nullptr;
      checkCuda(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), "cudaEventCreate(join)");
      join_ = join;
      watchdog_ = startThread("the GPU watchdog thread", [this] { watch(); });
    } else {
      logLine(LogLevel::kWarn, rank_,
              strCat("cuda_ipc unavailable, device buffers are staged through host memory: ", noChannelWhy_));
    }
  }
  if (!channel_) return false;
  if (auto error = asyncError(env.context)) throw *error;
  return true;
}

std::optional<Error> DeviceEngine::asyncError(const CallContext& ctx) const {
  const DeviceChannel* channel = channelView_.load(std::memory_order_acquire);
  if (channel == nullptr) return std::nullopt;
  const cuda::kernels::KernelError e = channel->lastError();
  if (e.code == 0) {
    // Paths without kernels: their queued waits were released (a lost peer, an abort), their outputs undefined.
    if (!shared_ || !shared_->released()) return std::nullopt;
    std::lock_guard lock(mu_);
    const std::string why = strCat("this rank's queued calls on ", shared_->name(), " were released");
    ErrorContext context = ctx;
    if (!lostWhy_.empty()) {
      context.peer = lostPeer_;
      return Error(ErrorCode::kPeerLost, strCat(why, ": ", lostWhy_), context);
    }
    return Error(ErrorCode::kAborted, strCat(why, ": the communicator was aborted"), ctx);
  }
  const std::string where = strCat("a GPU kernel of this communicator gave up waiting for rank ", e.peer, " (flag ",
                                   e.phase == 0 ? 'A' : 'B', " of round ", e.round, ", block ", e.block, ")");
  ErrorContext context = ctx;
  context.peer = e.peer;
  if (static_cast<KernelFailure>(e.code) == KernelFailure::kTimeout) {
    return Error(ErrorCode::kTimeout, strCat(where, ": no signal within ", settings_.timeoutSeconds, " s"), context);
  }
  std::lock_guard lock(mu_);
  if (!lostWhy_.empty()) return Error(ErrorCode::kPeerLost, strCat(where, ": ", lostWhy_), context);
  return Error(ErrorCode::kAborted, strCat(where, ": the communicator was aborted"), context);
}

std::uint64_t DeviceEngine::registeredCalls() const {
  const DeviceChannel* channel = channelView_.load(std::memory_order_acquire);
  if (channel == nullptr) return 0;
  const DeviceScope scope(device_);
  cuda::kernels::WorkspaceState state{};
  checkCuda(cudaMemcpy(&state, channel->channel().ws[rank_] + cuda::kernels::kStateOffset, sizeof state,
                       cudaMemcpyDeviceToHost),
            "cudaMemcpy(workspace state)");
  return state.registeredCalls;
}

void DeviceEngine::abort() {
  host_.abort();
  {
    std::lock_guard lock(mu_);
    aborted_ = true;
  }
  if (DeviceChannel* channel = channelView_.load(std::memory_order_acquire)) {
    channel->raiseAbort();
    shared_->release();  // made before the channel was published, reset after it was withdrawn
  }
}

// Kernels cannot see a peer process die; the host can (its exit, its heartbeat, its abort), and it can see a peer
// whose communicator broke (its kernels gave up, it timed out) say that it makes no more calls. This thread looks
// every 50 ms and makes the kernels give up at once when a peer is gone or said so: a late rank's kernels would
// otherwise wait out their whole timeout for a peer that failed the call before they started. The flag stops every
// kernel of this rank still running, those of earlier calls the broken peer finished too: they report PeerLost, a
// failure where the peer saw success, never a wrong result called done.
void DeviceEngine::watch() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(50));
    if (stopping_ || !lostWhy_.empty()) continue;
    lock.unlock();
    std::string why;
    int lost = -1;
    for (int p = 0; p < size_ && why.empty(); ++p) {
      // A peer that left has finished its calls (its own kernels did before it went): this rank's kernels may still
      // be waiting on others, so its leaving alone stops nothing.
      if (p == rank_ || host_.peerLeft(p)) continue;
      why = host_.peerFailure(p);
      if (why.empty()) why = host_.peerBroke(p);
      if (!why.empty()) lost = p;
    }
    lock.lock();
    if (!why.empty()) {
      lostWhy_ = why;
      lostPeer_ = lost;
      channel_->raiseAbort();
      shared_->release();
    }
  }
}

void DeviceEngine::launch(CollectiveParams p, const void* kernel, std::size_t unitBytes, const OpEnv& env,
                          const char* algorithm) {
  p.ch = channel_->channel();
  p.ch.registry = registry_.table();
  p.ch.timeoutNs = static_cast<std::uint64_t>(std::min(env.timeoutSeconds, 1e9) * 1e9);
  if (p.kind == CollectiveKind::kAllreduceLL) return launchLL(p, kernel, unitBytes, env);
  const std::size_t lanes = 16 / unitBytes;
  const std::size_t slotUnits = channel_->slotBytes() / unitBytes / lanes * lanes;
  p.roundUnits = p.kind == CollectiveKind::kAllreduceTwoShot ? slotUnits * static_cast<std::size_t>(size_) : slotUnits;
  p.rounds = static_cast<std::uint32_t>((p.count + p.roundUnits - 1) / p.roundUnits);
  std::size_t windowBytes = std::min(p.count, p.roundUnits) * unitBytes;
  if (p.kind == CollectiveKind::kAllreduceTwoShot) windowBytes /= static_cast<std::size_t>(size_);
  const int blocks = policy_.blocks(windowBytes, cuda::kernels::kMaxCollectiveBlocks);
  if (p.kind == CollectiveKind::kAllreduceOneShot && policy_.chunkBytes != 0) {
    // Whole 16-byte packs, and never more chunks per block and round than the flags can number.
    const std::size_t most = static_cast<std::size_t>(cuda::kernels::kFlagsPerRound) - 1;
    const std::size_t chunk = std::max(policy_.chunkBytes / unitBytes / lanes * lanes, lanes);
    p.chunkUnits = std::max(chunk, (std::min(p.count, p.roundUnits) + most - 1) / most);
    p.chunkUnits = (p.chunkUnits + lanes - 1) / lanes * lanes;
  }

  enqueue(p, kernel, blocks, windowBytes, env, algorithm);
}

void DeviceEngine::launchLL(CollectiveParams p, const void* kernel, std::size_t unitBytes, const OpEnv& env) {
  // One round; a thread per 8-byte line, one block per 512 lines, at most kMaxCollectiveBlocks (a thread then
  // takes several lines, kLlBatch per trip over the link).
  p.roundUnits = p.count;
  p.rounds = 1;
  const std::size_t lines = (p.count * unitBytes + 7) / 8;
  const int blocks = static_cast<int>(
      std::clamp<std::size_t>((lines + cuda::kernels::kCollectiveThreads - 1) / cuda::kernels::kCollectiveThreads, 1,
                              cuda::kernels::kMaxCollectiveBlocks));
  enqueue(p, kernel, blocks, p.count * unitBytes, env, "ll");
}

void DeviceEngine::followPrevious(const OpEnv& env) {
  // One communicator's kernels must run one after another (each waits for its peers' same kernel), and the
  // shared-GPU path's workspace reuse rests on its stream order: a call on another stream than the previous one
  // waits for it.
  cudaStream_t stream = streamOf(env);
  if (haveLast_ && env.stream != lastStream_ && !capturing(stream) &&
      !capturing(reinterpret_cast<cudaStream_t>(lastStream_))) {
    checkCuda(cudaEventRecord(join_, reinterpret_cast<cudaStream_t>(lastStream_)), "cudaEventRecord(previous call)");
    checkCuda(cudaStreamWaitEvent(stream, join_, 0), "cudaStreamWaitEvent");
  }
}

bool DeviceEngine::onSharedPath(const OpEnv& env) {
  if (!sharedPath_) return false;
  if (capturing(streamOf(env))) {
    fail(ErrorCode::kUnavailable, env.context, env.context.op,
         " on device buffers cannot be captured into a CUDA graph on the shared-GPU path (",
         channel_->sharing().empty() ? std::string("BRAID_ALGO=shared") : channel_->sharing(),
         "): its host waits for the GPU between steps; BRAID_CUDA_SHARED_GPU=kernels runs braid's kernels, which "
         "capture, but without MPS each call between processes then waits out a GPU time slice (~2 ms)");
  }
  followPrevious(env);
  if (logEnabled(LogLevel::kInfo) && logged_.insert(strCat(env.context.op, "/shared")).second) {
    logLine(LogLevel::kInfo, rank_,
            strCat(env.context.op, " on device buffers: the shared-GPU path (first call; later ones log nothing)"));
  }
  lastStream_ = env.stream;
  haveLast_ = true;
  return true;
}

void DeviceEngine::enqueue(const CollectiveParams& p, const void* kernel, int blocks, std::size_t windowBytes,
                           const OpEnv& env, const char* algorithm) {
  cudaStream_t stream = streamOf(env);
  followPrevious(env);
  if (logEnabled(LogLevel::kInfo) && logged_.insert(strCat(env.context.op, "/", algorithm)).second) {
    logLine(LogLevel::kInfo, rank_,
            strCat(env.context.op, " on device buffers: cuda_ipc/", algorithm, ", ", blocks, " blocks, ", p.rounds,
                   " round(s) of up to ", windowBytes, " B per block group (first call; later ones log nothing)"));
  }
  auto found = functions_.find(kernel);
  if (found == functions_.end()) {
    cudaFunction_t function = nullptr;
    checkCuda(cudaGetFuncBySymbol(&function, kernel), "cudaGetFuncBySymbol(collective kernel)");
    found = functions_.emplace(kernel, function).first;
  }
  void* args[] = {const_cast<CollectiveParams*>(&p)};
  const bool timed = timeline_ && !capturing(stream);
  if (timed) timeline_->before(stream);
  const CUresult status = cuda::driverApi().launchKernel(
      reinterpret_cast<CUfunction>(found->second), static_cast<unsigned>(blocks), 1, 1,
      cuda::kernels::kCollectiveThreads, 1, 1, 0, reinterpret_cast<CUstream>(stream), args, nullptr);
  if (timed && status == CUDA_SUCCESS) {
    timeline_->after(stream, strCat(env.context.op, " seq ", env.context.seq, " ", algorithm, " ", blocks, " blocks, ",
                                    p.count, " elements"));
  }
  if (status != CUDA_SUCCESS) {
    cuda::checkDriver(status, strCat("cuLaunchKernel(", env.context.op, " ", algorithm, ")").c_str());
  }
  lastStream_ = env.stream;
  haveLast_ = true;
}

void DeviceEngine::readInPlaceIfRegistered(CollectiveParams& p, std::size_t bytes, std::size_t sendBytes,
                                           std::size_t recvBytes) const {
  if (registry_.empty() || bytes < settings_.cudaRegisteredMinBytes) return;
  p.direct = 1;
  p.sendBytes = sendBytes;
  p.recvBytes = recvBytes;
  std::tie(p.mine.send, p.mine.sendOffset) = registry_.find(p.send, sendBytes);
  if (recvBytes != 0) std::tie(p.mine.recv, p.mine.recvOffset) = registry_.find(p.recv, recvBytes);
}

std::uint64_t DeviceEngine::registerBuffer(void* ptr, std::size_t bytes, const OpEnv& env) {
  const DeviceScope scope(device_);
  // Staged calls read nothing in place: every rank alike (the channel is there on all or on none).
  if (!kernelsReady(env)) return 0;
  return registry_.add(host_, rank_, size_, device_, ptr, bytes, env) + 1;
}

void DeviceEngine::deregisterBuffer(std::uint64_t id, const OpEnv& env) {
  const DeviceScope scope(device_);
  if (id == 0) return;
  if (haveLast_ && !capturing(reinterpret_cast<cudaStream_t>(lastStream_))) {
    // This rank's kernels that may read the buffers (and its peers', which end before these do) finish first.
    checkCuda(cudaEventRecord(join_, reinterpret_cast<cudaStream_t>(lastStream_)), "cudaEventRecord(deregister)");
    checkCuda(cudaEventSynchronize(join_), "cudaEventSynchronize(deregister)");
  }
  registry_.remove(host_, size_, static_cast<std::uint32_t>(id - 1), env);
}

const void* DeviceEngine::premultiplied(const void* src, void* dst, std::size_t count, DataType type, ReduceOp op,
                                        const OpEnv& env) {
  if (op.kind != ReduceKind::kPremulSum || op.scale == 1.0) return src;
  const std::size_t bytes = count * dataTypeSize(type);
  if (dst == nullptr) {
    if (scratchBytes_ < bytes) {
      // Freeing waits for the device: rare (the scratch only grows), and earlier calls may still read it.
      if (scratch_ != nullptr) checkCuda(cudaFree(scratch_), "cudaFree(scratch)");
      scratch_ = nullptr;
      scratchBytes_ = 0;
      checkCuda(cudaMalloc(&scratch_, bytes), "cudaMalloc(premul scratch)");
      scratchBytes_ = bytes;
    }
    dst = scratch_;
  }
  cuda::scaleCopyOnDevice(dst, src, count, type, op.scale, streamOf(env));
  return dst;
}

// ---- The collectives. Counts are the same on every rank (checked by core/ or a matching precondition), so
// every rank takes the same path.

void DeviceEngine::run(const CallArgs& c, const OpEnv& env) {
  const DeviceScope scope(device_);
  switch (c.collective) {
    // Per-rank counts differ between ranks, so these go through the host engine, whose rounds carry them; a
    // barrier, point-to-point and a rejected call need no kernel.
    case Collective::kRejected:
    case Collective::kBarrier:
    case Collective::kAllgatherv:
    case Collective::kAlltoallv:
    case Collective::kPointToPoint:
      return staging_.run(c, env);
    default:
      break;
  }
  if (c.count == 0) return;
  if (!kernelsReady(env)) return staging_.run(c, env);
  if (c.collective == Collective::kAllreduce) return runAllreduce(c, env);
  const bool reduces = c.collective == Collective::kReduce || c.collective == Collective::kReduceScatter;
  // Refused here, before any rank publishes or launches anything, whichever path the call takes.
  const DeviceOp dop =
      reduces ? static_cast<DeviceOp>(resolveElementwiseOp(c.type, c.op.kind, collectiveName(c.collective)))
              : DeviceOp{};
  if (onSharedPath(env)) return shared_->run(c, env);
  if (reduces) return launchReducing(c, dop, env);
  launchMoving(c, env);
}

void DeviceEngine::runAllreduce(const CallArgs& c, const OpEnv& env) {
  const std::size_t bytes = c.count * dataTypeSize(c.type);
  const tuning::AlgorithmDescriptor& a = policy_.allreduce(bytes, facts(), links());
  if (a.id == tuning::Algorithm::kGpuStaged) return staging_.run(c, env);
  const DeviceOp dop = static_cast<DeviceOp>(resolveElementwiseOp(c.type, c.op.kind, "allreduce"));
  if (a.id == tuning::Algorithm::kGpuShared && onSharedPath(env)) return shared_->run(c, env);
  CollectiveParams p{};
  p.send = premultiplied(c.send, c.recv, c.count, c.type, c.op, env);
  p.recv = c.recv;
  p.count = c.count;
  p.avgDivisor = size_;
  const bool ll = a.id == tuning::Algorithm::kGpuLL;
  p.kind = ll                                       ? CollectiveKind::kAllreduceLL
           : a.id == tuning::Algorithm::kGpuOneShot ? CollectiveKind::kAllreduceOneShot
                                                    : CollectiveKind::kAllreduceTwoShot;
  if (!ll) readInPlaceIfRegistered(p, bytes, bytes, bytes);
  launch(p, cuda::kernels::reducingCollectiveKernel(c.type, dop, ll), dataTypeSize(c.type), env, a.name);
}

void DeviceEngine::launchReducing(const CallArgs& c, DeviceOp dop, const OpEnv& env) {
  CollectiveParams p{};
  p.recv = c.recv;
  p.count = c.count;
  p.avgDivisor = size_;
  if (c.collective == Collective::kReduce) {
    p.send = premultiplied(c.send, rank_ == c.root ? c.recv : nullptr, c.count, c.type, c.op, env);
    p.root = c.root;
    p.kind = CollectiveKind::kReduce;
  } else {
    const std::size_t all = c.count * static_cast<std::size_t>(size_);
    p.send = premultiplied(c.send, nullptr, all, c.type, c.op, env);
    p.kind = CollectiveKind::kReduceScatter;
    const std::size_t sendBytes = all * dataTypeSize(c.type);
    readInPlaceIfRegistered(p, sendBytes, sendBytes, 0);
  }
  launch(p, cuda::kernels::reducingCollectiveKernel(c.type, dop), dataTypeSize(c.type), env,
         collectiveName(c.collective));
}

// Collectives that move bytes: one kernel for all of them, counting in bytes.
void DeviceEngine::launchMoving(const CallArgs& c, const OpEnv& env) {
  CollectiveParams p{};
  p.send = c.send;
  p.recv = c.recv;
  p.count = c.count * dataTypeSize(c.type);
  p.root = c.root;
  p.avgDivisor = 1;
  const char* name = collectiveName(c.collective);
  switch (c.collective) {
    case Collective::kBroadcast:
      p.kind = CollectiveKind::kBroadcast;
      break;
    case Collective::kAllgather:
      p.kind = CollectiveKind::kAllgather;
      readInPlaceIfRegistered(p, p.count * static_cast<std::size_t>(size_), p.count, 0);
      if (p.direct != 0) name = "allgather/registered";
      break;
    case Collective::kGather:
      p.kind = CollectiveKind::kGather;
      break;
    case Collective::kScatter:
      p.kind = CollectiveKind::kScatter;
      break;
    case Collective::kAlltoall:
      p.kind = CollectiveKind::kAlltoall;
      break;
    default:
      fail(ErrorCode::kInternal, env.context, "braid's GPU kernels have no ", name);
  }
  launch(p, cuda::kernels::copyingCollectiveKernel(), 1, env, name);
}

}  // namespace braid::device
