// Making communicators: from the launcher's environment, from a unique id the caller distributed, or over the
// caller's own key-value store. All three end in join(), over a bootstrap::Store.
#include "core/create.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <system_error>

#include "algorithms/device/device_engine_factory.hpp"
#include "algorithms/host/net/net_engine.hpp"
#include "algorithms/host/reduce_cpu.hpp"
#include "algorithms/host/round_sync.hpp"
#include "bootstrap/external_store.hpp"
#include "bootstrap/launch_env.hpp"
#include "bootstrap/launch_rendezvous.hpp"
#include "bootstrap/shm_rendezvous.hpp"
#include "bootstrap/tcp_mesh_rendezvous.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/unique_id.hpp"
#include "braid/braid.hpp"
#include "core/communicator_access.hpp"
#include "core/communicator_impl.hpp"
#include "core/engine_selectors.hpp"
#include "core/this_host.hpp"
#include "topology/cgroup_limits.hpp"
#include "transport/host_identity.hpp"

namespace braid {

namespace {

// Every rank counts itself here once its creation no longer needs the store; the rank that makes the count whole
// sets kAllCreatedKey.
constexpr const char* kCreatedKey = "created/count";
constexpr const char* kAllCreatedKey = "created/all";
// How long the rank that hosts the store waits, as its communicator goes, for peers still finishing their creation:
// they are milliseconds behind it, unless one failed, which this wait must not turn into a hang.
constexpr double kStoreLingerSeconds = 10;

// What the bootstrap leaves behind that must live as long as the communicator.
struct Rendezvous {
  std::unique_ptr<bootstrap::TcpStoreServer> server;  // rank 0 of an environment-started job
  std::shared_ptr<AbortHandle> abort;                 // may cancel the creation, and abort what it made
  std::shared_ptr<bootstrap::Store> store;            // a TcpStoreClient, or the caller's store (ExternalStore)
  std::shared_ptr<void> parent;                       // what the parent communicator keeps alive (split, subgroup)
  // The store is served from one of the job's ranks (an environment-started job): each rank counts itself created,
  // and the serving rank's server waits for the count as it goes. Other stores outlive every rank's creation.
  bool servedByARank = false;
  bool created = false;  // this rank's creation finished (countCreated)

  Rendezvous() = default;
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;
  // A rank that hosts the store and returns from creation first may be destroyed at once (a program that only
  // creates, or sends and leaves); its peers may still be reading the store for their own creation. So the server
  // stops only once every rank counted itself created, or after kStoreLingerSeconds.
  ~Rendezvous() {
    if (!server || !store || !created) return;
    try {
      store->get(kAllCreatedKey,
                 Deadline::after(kStoreLingerSeconds).cancellable(core::CommunicatorAccess::abortFlag(abort.get())));
    } catch (...) {  // NOLINT(bugprone-empty-catch): a peer that failed its creation; the server stops regardless
    }
  }
};

// After a creation's last store traffic: this rank no longer needs the store (see ~Rendezvous).
void countCreated(Rendezvous& rendezvous, int size) {
  if (rendezvous.servedByARank && rendezvous.store->add(kCreatedKey, 1) == size) {
    rendezvous.store->set(kAllCreatedKey, "1");
  }
  rendezvous.created = true;
}

void checkWorld(int rank, int size) {
  if (size < 1) fail(ErrorCode::kInvalidArgument, {}, "world size ", size, " must be at least 1");
  if (rank < 0 || rank >= size)
    fail(ErrorCode::kInvalidArgument, {}, "rank ", rank, " out of range for ", size, " ranks");
}

}  // namespace

// Over TCP: a mesh among all ranks (other hosts, or BRAID_TRANSPORT=tcp).
std::unique_ptr<Engine> core::joinTcpEngine(bootstrap::Store& store, int rank, int size, const Settings& settings,
                                            int nicMbps, Deadline deadline) {
  bootstrap::MeshRendezvous how;
  how.prefix = "tcp";
  how.ifname = settings.ifname;
  how.token = settings.token;
  how.options.streams = static_cast<int>(settings.tcpStreams);
  how.options.socketBufferBytes = settings.tcpBufferBytes;
  how.options.describe = host::describeInWords;
  how.options.heartbeatInterval = settings.heartbeatIntervalSeconds;
  how.options.heartbeatTimeout = settings.heartbeatIntervalSeconds > 0 ? settings.heartbeatTimeoutSeconds : 0;
  auto mesh = bootstrap::joinTcpMesh(store, rank, size, how, deadline);
  auto selector = std::make_shared<const tuning::Selector>(core::tcpSelector(size, nicMbps, settings));
  host::NetPolicy policy;
  policy.choose = [selector](std::size_t bytes) -> const tuning::AlgorithmDescriptor& {
    return *selector->choose(bytes).algorithm;
  };
  policy.explain = [selector](std::size_t bytes) { return selector->explain(bytes); };
  if (settings.compress != "" && settings.compress != "bf16") {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_COMPRESS=", settings.compress, " is not one of: (empty), bf16");
  }
  policy.compressBf16 = settings.compress == "bf16";
  return std::make_unique<host::NetEngine>(std::move(mesh), std::move(policy), settings.tcpSpinMicros,
                                           settings.debug == "detail");
}

// Ranks of one host: a shared-memory group among them.
std::unique_ptr<Engine> core::joinShmEngine(bootstrap::Store& store, int rank, int size, const Settings& settings,
                                            HostLayout host, Deadline deadline) {
  return makeLocalEngine(
      size, bootstrap::joinShmGroup(store, rank, size, localFabricLayout(size, settings, host).regionBytes, deadline),
      settings, host);
}

// Ranks of different hosts share a GPU only where one machine runs several hosts (BRAID_HOST_ID, network
// namespaces): then every rank tells the others its machine and the GPU current at creation, and learns whether
// another rank on its machine holds the same one. Returns that GPU's identity, or empty. Traded through the store
// here because the transport's own messages belong to calls.
std::string core::gpuSharedAcrossHosts(bootstrap::Store& store, int rank, int size, Deadline deadline) {
  const std::string gpu = device::gpuIdentity(-1);
  const std::string mine = strCat(core::Placement::machineOf(transport::hostIdentity()), "/", gpu);
  const std::vector<std::string> all = bootstrap::allGather(store, "gpu", rank, size, mine, deadline);
  for (int q = 0; q < size; ++q) {
    if (q != rank && !gpu.empty() && all[static_cast<std::size_t>(q)] == mine) return gpu;
  }
  return "";
}

namespace {

// Every rank tells the others its host. Ranks share a host when they share a boot id and a network namespace:
// only then may they map each other's shared memory and trust each other's pids (a hostname says neither).
// BRAID_HOST_ID splits one machine into several such hosts, each named for its id.
core::Placement placeRanks(bootstrap::Store& store, int rank, int size, const Settings& settings, Deadline deadline) {
  // With its CPUs, their NUMA node and the rate of the NICs its TCP traffic would take: the ranks of a host then
  // weigh the same machine when they choose algorithms, whatever masks their launcher gave each, and every rank
  // prices steps between hosts at the slowest rank's NICs.
  const topology::Topology& here = core::thisHost();
  core::RankHost mine{transport::hostIdentity(), transport::hostName(), here.usableCpuIds};
  if (!settings.hostId.empty()) {
    mine.identity = strCat(mine.identity, "/id:", settings.hostId);
    mine.name = strCat(mine.name, "/", settings.hostId);
  }
  mine.numaNode = core::numaNodeOf(here, mine.cpus);
  mine.nicMbps = core::nicMbpsOf(here, bootstrap::meshInterfaceNames(settings.ifname));
  static const topology::CgroupLimits limits = topology::readCgroupLimits("");  // once a process, as thisHost()
  mine.cpuQuota = topology::wholeCpus(limits.cpus);
  mine.cpuQuotaGroup = limits.cpusGroup;
  std::vector<core::RankHost> hosts;
  for (const std::string& text :
       bootstrap::allGather(store, "host", rank, size, core::Placement::encode(mine), deadline)) {
    hosts.push_back(core::Placement::decode(text));
  }
  return core::Placement::of(hosts, rank);
}

std::unique_ptr<Communicator> join(int rank, int size, std::shared_ptr<Rendezvous> rendezvous,
                                   const Settings& settings) {
  if (settings.transport != "auto" && settings.transport != "shm" && settings.transport != "tcp") {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_TRANSPORT=", settings.transport, " is not one of auto, shm, tcp");
  }
  if (!settings.isa.empty()) host::setReduceIsaCap(settings.isa);
  std::shared_ptr<AbortHandle> abort = rendezvous->abort;
  if (!settings.debug.empty() && settings.debug != "detail") {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_DEBUG=", settings.debug, " is not one of: (empty), detail");
  }
  if (settings.netStagingReduce != "gpu" && settings.netStagingReduce != "host") {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_NET_STAGING_REDUCE=", settings.netStagingReduce,
         " is not one of: gpu, host");
  }
  if (settings.hostId.find('\n') != std::string::npos) {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_HOST_ID holds a line break: it must be one line");
  }
  const Deadline deadline =
      Deadline::after(settings.timeoutSeconds).cancellable(core::CommunicatorAccess::abortFlag(abort.get()));
  core::Placement placement = placeRanks(*rendezvous->store, rank, size, settings, deadline);
  const bool tcp = settings.transport == "tcp" || (settings.transport == "auto" && placement.hosts() > 1);
  const std::shared_ptr<bootstrap::Store> store = rendezvous->store;
  const core::HostLayout hostLayout{
      .ranks = placement.localSize, .cpus = placement.localCpus, .numaNodes = placement.localNumaNodes};
  const int nicMbps = placement.hosts() > 1 ? placement.slowestNicMbps : 0;
  std::unique_ptr<Engine> engine = tcp ? core::joinTcpEngine(*store, rank, size, settings, nicMbps, deadline)
                                       : core::joinShmEngine(*store, rank, size, settings, hostLayout, deadline);
  std::string sharedGpu =
      tcp && placement.machineRunsSeveralRanks ? core::gpuSharedAcrossHosts(*store, rank, size, deadline) : "";
  countCreated(*rendezvous, size);
  auto impl = std::make_unique<core::CommunicatorImpl>(rank, size, std::move(engine), settings, std::move(rendezvous),
                                                       hostLayout);
  impl->attachStore(store);
  impl->attachSharedGpu(std::move(sharedGpu));
  impl->attachPlacement(std::move(placement));
  if (abort) impl->attachAbortHandle(abort);
  return core::CommunicatorAccess::wrap(std::move(impl));
}

// Built when the library loads: throwing a copy allocates nothing (its strings are short, or shared), so a creation
// that ran out of memory can say so even where building a longer message fails too.
const Error kOutOfMemory(ErrorCode::kUnavailable, "out of memory", ErrorContext{.op = "create"});

[[noreturn]] void outOfResources(const char* what, const char* detail) {
  try {
    fail(ErrorCode::kUnavailable, {.op = "create"}, what, detail);
  } catch (const std::bad_alloc&) {
    throw kOutOfMemory;
  }
}

// Runs a creation; when its abort handle fired meanwhile, whatever the creation failed with becomes Aborted. The
// system running out of memory or of a resource (fds, threads) on the way is an Error too, never another exception.
template <typename Make>
std::unique_ptr<Communicator> abortable(const std::shared_ptr<AbortHandle>& abort, Make&& make) {
  if (abort && abort->aborted()) fail(ErrorCode::kAborted, {.op = "create"}, "creation aborted before it began");
  try {
    return make();
  } catch (const Error& e) {
    if (abort && abort->aborted() && e.code() != ErrorCode::kAborted) {
      fail(ErrorCode::kAborted, {.op = "create"}, "creation aborted (it was at: ", e.message(), ")");
    }
    throw;
  } catch (const std::bad_alloc&) {
    outOfResources("out of memory while creating the communicator", "");
  } catch (const std::system_error& e) {
    outOfResources("the system refused a resource while creating the communicator: ", e.what());
  }
}

}  // namespace

std::unique_ptr<Communicator> Communicator::fromEnvironment() { return fromEnvironment(nullptr); }

std::unique_ptr<Communicator> Communicator::fromEnvironment(std::shared_ptr<AbortHandle> abort) {
  return abortable(abort, [&] {
    const Settings settings = Settings::fromEnvironment();
    bootstrap::JobRendezvous job =
        bootstrap::rendezvousFromEnvironment(settings, {}, {}, core::CommunicatorAccess::abortFlag(abort.get()));
    auto rendezvous = std::make_shared<Rendezvous>();
    rendezvous->server = std::move(job.server);
    rendezvous->store = std::move(job.client);
    rendezvous->abort = abort;
    rendezvous->servedByARank = true;
    return join(job.identity.rank, job.identity.size, std::move(rendezvous), settings);
  });
}

bool Communicator::launchedByLauncher() { return bootstrap::launcherPresent(Settings::fromEnvironment()); }

UniqueId Communicator::uniqueId() {
  const auto bytes = bootstrap::createUniqueId();
  UniqueId id;
  static_assert(sizeof id.bytes == sizeof bytes.bytes);
  std::memcpy(id.bytes, bytes.bytes.data(), sizeof id.bytes);
  return id;
}

std::unique_ptr<Communicator> Communicator::create(const UniqueId& id, int rank, int size) {
  return core::createWithSettings(id, rank, size, Settings::fromEnvironment());
}

std::unique_ptr<Communicator> Communicator::create(const UniqueId& id, int rank, int size,
                                                   std::shared_ptr<AbortHandle> abort) {
  return core::createWithSettings(id, rank, size, Settings::fromEnvironment(), std::move(abort));
}

std::unique_ptr<Communicator> core::createWithSettings(const UniqueId& id, int rank, int size, const Settings& settings,
                                                       std::shared_ptr<AbortHandle> abort) {
  checkWorld(rank, size);
  return abortable(abort, [&] {
    bootstrap::UniqueIdBytes bytes;
    std::memcpy(bytes.bytes.data(), id.bytes, sizeof id.bytes);
    const auto decoded = bootstrap::decodeUniqueId(bytes);
    auto rendezvous = std::make_shared<Rendezvous>();
    rendezvous->abort = abort;
    rendezvous->store = std::make_unique<bootstrap::TcpStoreClient>(
        decoded.root, decoded.token,
        Deadline::after(settings.timeoutSeconds).cancellable(core::CommunicatorAccess::abortFlag(abort.get())),
        settings.timeoutSeconds);
    return join(rank, size, std::move(rendezvous), settings);
  });
}

std::unique_ptr<Communicator> Communicator::create(std::shared_ptr<KeyValueStore> store, int rank, int size,
                                                   const std::string& prefix) {
  checkWorld(rank, size);
  const Settings settings = Settings::fromEnvironment();
  return abortable(nullptr, [&] {
    auto rendezvous = std::make_shared<Rendezvous>();
    rendezvous->store = bootstrap::ExternalStore::claim(std::move(store), prefix, size);
    return join(rank, size, std::move(rendezvous), settings);
  });
}

std::unique_ptr<Communicator> core::joinOverStore(std::shared_ptr<bootstrap::Store> store,
                                                  std::shared_ptr<void> keepAlive, int rank, int size,
                                                  const Settings& settings) {
  checkWorld(rank, size);
  return abortable(nullptr, [&] {
    auto rendezvous = std::make_shared<Rendezvous>();
    rendezvous->store = std::move(store);
    rendezvous->parent = std::move(keepAlive);
    return join(rank, size, std::move(rendezvous), settings);
  });
}

}  // namespace braid
