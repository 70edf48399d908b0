#include "core/engine_stack.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "algorithms/device/device_engine_factory.hpp"
#include "algorithms/host/local_engine.hpp"
#include "base/error.hpp"
#include "base/logging.hpp"
#include "core/engine_selectors.hpp"
#include "core/this_host.hpp"
#include "topology/topology.hpp"
#include "tuning/device_path.hpp"
#include "tuning/selector.hpp"
#include "tuning/shm_slot.hpp"

namespace braid::core {

HostLayout orThisProcess(HostLayout host, int size) {
  if (host.ranks <= 0) host.ranks = size;
  if (host.cpus <= 0) host.cpus = tuning::machineOf(thisHost(), size, tuning::Link::kShm).usableCpus;
  if (host.shmBytes == 0) host.shmBytes = thisHost().shmBytes;
  return host;
}

bool outnumbersItsCpus(HostLayout host) { return host.ranks > std::max(host.cpus, 1); }

std::size_t streamingFromBytes(const Settings& settings, const topology::Topology& machine) {
  const std::string& v = settings.shmStreamBytes;
  if (v == "off") return std::numeric_limits<std::size_t>::max();
  if (v.empty() || v == "auto") return machine.l2CacheBytes > 0 ? machine.l2CacheBytes : std::size_t{1} << 20;
  const auto bytes = parseBytes(v);
  if (!bytes) {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_SHM_STREAM_BYTES='", v,
         "' is not auto, off or a byte count (e.g. 4M, 1048576)");
  }
  return *bytes;
}

namespace {

bool singleCopyOn(const Settings& settings) {
  const std::string& v = settings.shmSingleCopy;
  if (v.empty() || v == "on") return true;
  if (v == "off") return false;
  fail(ErrorCode::kInvalidArgument, {}, "BRAID_SHM_SINGLE_COPY='", v, "' is not on or off");
}

transport::FabricLayout layoutFor(int size, const Settings& settings, int threads) {
  return transport::FabricLayout::compute(size, tuning::shmSlotBytes(size, settings.shmSlotBytes, threads),
                                          settings.shmP2pBytes);
}

// auto's threads, fewer where the group's regions, whose slots grow with them, would take more than half of the
// host's /dev/shm: a container's default (Docker's 64 MiB) cannot hold 8 ranks of 8 threads (8 MiB slots), and the
// program passes its own data through /dev/shm too (PyTorch's data loaders). Every rank of the group sees the same
// /dev/shm and layout, so all of them arrive at the same count. Where even one thread's regions do not fit, creation
// says so and names the fix (ShmSegment::create). Each group is weighed by itself: several groups (process groups,
// splits) may each take up to half.
int threadsTheRegionsFit(int threads, int size, const Settings& settings, std::uint64_t shmBytes) {
  if (shmBytes == 0) return threads;
  const auto groupBytes = [&](int t) {
    return static_cast<std::uint64_t>(layoutFor(size, settings, t).regionBytes) * static_cast<std::uint64_t>(size);
  };
  while (threads > 1 && groupBytes(threads) > shmBytes / 2 && groupBytes(threads - 1) < groupBytes(threads)) {
    --threads;
  }
  return threads;
}

}  // namespace

int sharedMemoryThreads(const Settings& settings, HostLayout host, int size) {
  // auto stops at 8, a bound on the CPUs and slot memory it takes: the most threads a rank has been measured with.
  constexpr int kAutoMost = 8;
  constexpr int kMost = 256;
  const std::string& v = settings.shmThreads;
  if (v == "1") return 1;
  if (v.empty() || v == "auto") {
    host = orThisProcess(host, size);
    const int byCpus = std::clamp(host.cpus / std::max(host.ranks, 1), 1, kAutoMost);
    return threadsTheRegionsFit(byCpus, size, settings, host.shmBytes);
  }
  int threads = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), threads);
  if (ec != std::errc() || end != v.data() + v.size() || threads < 1 || threads > kMost) {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_SHM_THREADS='", v, "' is not auto or a thread count from 1 to ",
         kMost);
  }
  return threads;
}

transport::FabricLayout localFabricLayout(int size, const Settings& settings, HostLayout host) {
  return layoutFor(size, settings, sharedMemoryThreads(settings, host, size));
}

std::unique_ptr<Engine> makeLocalEngine(int size, std::unique_ptr<transport::LocalGroup> group,
                                        const Settings& settings, HostLayout host) {
  const HostLayout here = orThisProcess(host, size);
  const int threads = sharedMemoryThreads(settings, here, size);
  const auto layout = layoutFor(size, settings, threads);
  if (logEnabled(LogLevel::kInfo)) {
    logLine(LogLevel::kInfo, group->rank(),
            strCat("shared memory: ", size, " ranks, ", threads, " thread(s) a rank, slots of ", layout.slotBytes,
                   " bytes, ", layout.regionBytes, " bytes a rank",
                   here.shmBytes > 0 ? strCat(" (/dev/shm holds ", here.shmBytes, ")")
                                     : std::string(" (/dev/shm's size unknown)")));
  }
  auto selector = std::make_shared<const tuning::Selector>(sharedMemorySelector(size, here, settings));
  auto choose = [selector](std::size_t bytes) -> const tuning::AlgorithmDescriptor& {
    return *selector->choose(bytes).algorithm;
  };
  auto explain = [selector](std::size_t bytes) { return selector->explain(bytes); };
  const host::LocalCollectives::Options options{
      .streamFromBytes = streamingFromBytes(settings, thisHost()),
      .threads = threads,
      // as the calls' waits spin (CommunicatorImpl::makeEnv)
      .spinMicros = outnumbersItsCpus(here) ? std::min(settings.spinMicros, 5L) : settings.spinMicros,
      .singleCopy = singleCopyOn(settings)};
  return std::make_unique<host::LocalEngine>(std::move(group), layout, choose, explain, options,
                                             settings.heartbeatIntervalSeconds, settings.heartbeatTimeoutSeconds);
}

namespace {

// The device engine's allreduce selectors, one for each set of facts and links it may report (before it connects,
// after), each made when first asked: an engine asks for one or two. Selectors stay where they were made (a map's
// nodes do not move), so a reference handed out stays good. Every call asks, mostly for the one it asked for last:
// that one is found without the lock.
class DeviceSelectors {
 public:
  DeviceSelectors(int size, Settings settings) : size_(size), settings_(std::move(settings)) {}

  const tuning::Selector& of(const device::DeviceFacts& f, const device::GpuLinks& links) {
    const Key key{f.channel, f.shared, f.processes, links};
    if (const Entry* last = last_.load(std::memory_order_acquire); last != nullptr && last->first == key) {
      return last->second;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = selectors_.find(key);
    if (it == selectors_.end()) it = selectors_.emplace(key, deviceSelector(f, links, size_, settings_)).first;
    last_.store(&*it, std::memory_order_release);
    return it->second;
  }

 private:
  using Key = std::tuple<bool, bool, bool, device::GpuLinks>;
  using Entry = std::pair<const Key, tuning::Selector>;

  const int size_;
  const Settings settings_;
  std::mutex mutex_;
  std::map<Key, tuning::Selector> selectors_;
  std::atomic<const Entry*> last_{nullptr};
};

// The device engine's choices: its algorithms weighed by a selector, as makeLocalEngine does for the host engine.
device::DevicePolicy devicePolicy(int size, const Settings& settings) {
  device::DevicePolicy policy;
  policy.sharedPath = [settings](bool shared) {
    return tuning::chooseSharedGpuPath(shared, shared && topology::mpsServerRunning(), settings);
  };
  auto selectors = std::make_shared<DeviceSelectors>(size, settings);
  policy.allreduce = [selectors](std::size_t bytes, const device::DeviceFacts& facts,
                                 const device::GpuLinks& links) -> const tuning::AlgorithmDescriptor& {
    return *selectors->of(facts, links).choose(bytes).algorithm;
  };
  policy.explain = [selectors](std::size_t bytes, const device::DeviceFacts& facts, const device::GpuLinks& links) {
    return selectors->of(facts, links).explain(bytes);
  };
  policy.blocks = [settings](std::size_t windowBytes, int maxBlocks) {
    return tuning::deviceBlocks(windowBytes, maxBlocks, settings);
  };
  policy.chunkBytes = settings.cudaChunkBytes;
  return policy;
}

}  // namespace

EngineStack::EngineStack(int rank, int size, std::unique_ptr<Engine> host, Settings settings)
    : rank_(rank), size_(size), settings_(std::move(settings)), host_(std::move(host)) {}

transport::LocalGroup* EngineStack::localGroup() const {
  auto* local = dynamic_cast<host::LocalEngine*>(host_.get());
  return local ? &local->group() : nullptr;
}

Engine& EngineStack::forRoute(const Route& route, const OpEnv& env) {
  if (!route.device) {
    device::waitForStream(env);
    return *host_;
  }
  if (!device_) {
    // GPU kernels reach only the GPUs of this host: a group over the network stages its device buffers.
    device_ =
        device::makeDeviceEngine(*host_, rank_, size_, settings_, localGroup() != nullptr,
                                 devicePolicy(size_, settings_), deviceOfPointer(route.firstGpuPointer), sharedGpu_);
    deviceView_.store(device_.get(), std::memory_order_release);
  }
  return *device_;
}

void EngineStack::abort() {
  host_->abort();
  if (Engine* device = deviceView_.load(std::memory_order_acquire)) device->abort();
}

std::optional<Error> EngineStack::asyncError(const CallContext& ctx) const {
  const Engine* device = deviceView_.load(std::memory_order_acquire);
  return device ? device->asyncError(ctx) : std::nullopt;
}

}  // namespace braid::core
