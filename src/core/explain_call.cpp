#include "core/explain_call.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "base/error.hpp"
#include "topology/link_generation.hpp"
#include "tuning/device_path.hpp"
#include "tuning/hierarchy.hpp"

namespace braid::core {

namespace {

constexpr const char* kCollectives[] = {"allreduce", "reduce", "broadcast", "allgather", "reducescatter", "alltoall",
                                        "alltoallv", "gather", "scatter",   "barrier",   "allgatherv",    "sendrecv"};

bool reduces(const std::string& c) { return c == "allreduce" || c == "reduce"; }

// What the GPU path does with a collective other than allreduce.
std::string deviceSchedule(const std::string& c) {
  if (c == "allgatherv" || c == "alltoallv" || c == "sendrecv") {
    return "staged: per-rank counts differ between ranks, so the buffers go through pinned host memory and the "
           "host path";
  }
  if (c == "barrier") return "a host barrier (no buffers)";
  return "cuda_ipc kernel: producers push their blocks into the consumers' inboxes over the link, per-block flags";
}

// What the TCP path does with a collective other than allreduce.
std::string netSchedule(const std::string& c, bool direct) {
  if (c == "broadcast") return direct ? "binomial tree from the root" : "pipelined chain from the root";
  if (c == "allgather" || c == "allgatherv")
    return direct ? "direct: every rank sends its block to every peer" : "ring";
  if (c == "reducescatter") return "ring reduce-scatter";
  if (c == "alltoall" || c == "alltoallv") return "all pairs at once";
  if (c == "gather" || c == "scatter") return "direct with the root";
  if (c == "barrier") return "dissemination";
  return "point to point";
}

}  // namespace

std::string explainCall(const topology::Topology& t, const CallShape& call, const Settings& settings) {
  if (std::find(std::begin(kCollectives), std::end(kCollectives), call.collective) == std::end(kCollectives)) {
    fail(ErrorCode::kInvalidArgument, {}, "'", call.collective,
         "' is not a collective (allreduce, reduce, broadcast, allgather, reducescatter, alltoall, alltoallv, "
         "gather, scatter, barrier, allgatherv, sendrecv)");
  }
  if (call.ranks < 1 || call.hosts < 1 || call.ranks < call.hosts) {
    fail(ErrorCode::kInvalidArgument, {}, call.ranks, " rank(s) over ", call.hosts,
         " host(s): need at least one rank per host");
  }
  const int local = (call.ranks + call.hosts - 1) / call.hosts;
  std::ostringstream out;
  out << call.collective << " of " << call.bytes << " B over " << call.ranks << " rank(s)"
      << (call.hosts > 1 ? " on " + std::to_string(call.hosts) + " hosts" : std::string(" on one host")) << ", "
      << (call.device ? "GPU" : "host") << " buffers, on " << (t.hostname.empty() ? "this machine" : t.hostname)
      << ":\n";
  const bool uniform = call.ranks % call.hosts == 0;
  // Every host like this one: their NICs as fast as its fastest, which TCP takes unless BRAID_IFNAME says otherwise.
  const topology::Nic* nic = t.fastestNic();
  const int nicMbps = nic != nullptr && nic->speedMbps > 0 ? nic->speedMbps : 0;
  if (call.hosts > 1 && !call.device && call.collective == "allreduce" && uniform && local > 1 &&
      tuning::useHierarchy(call.bytes, settings)) {
    // algorithms/hierarchical_allreduce.cpp: the same three steps the communicator takes.
    const std::size_t shard = call.bytes / static_cast<std::size_t>(local);
    out << "  transport: shared memory inside each host, TCP between hosts\n"
        << "  algorithm: hierarchical (" << call.bytes << " B >= " << settings.hierarchyMinBytes
        << " B, BRAID_HIERARCHY): reduce-scatter among the " << local << " local ranks; between the " << call.hosts
        << " hosts, each local rank's " << shard
        << " B shard among the ranks of its local rank: " << explainTcpAllreduce(shard, call.hosts, nicMbps, settings)
        << "; allgather among the local ranks\n";
    if (settings.compress == "bf16") out << "  float32 sums: bfloat16 on the wire between hosts (BRAID_COMPRESS)\n";
    return out.str();
  }
  if (call.hosts > 1) {
    const std::string net = explainTcpAllreduce(call.bytes, call.ranks, nicMbps, settings);
    out << "  transport: TCP between all ranks"
        << (nic != nullptr ? " over " + (settings.ifname.empty() ? nic->name : settings.ifname) : std::string()) << ", "
        << settings.tcpStreams << " stream(s) per peer\n";
    if (call.device)
      out << "  GPU buffers: staged through pinned host memory (braid has no GPU-direct network path yet)\n";
    out << "  algorithm: "
        << (reduces(call.collective) ? net : netSchedule(call.collective, net.rfind("ring:", 0) != 0)) << "\n";
    return out.str();
  }
  if (!call.device) {
    out << "  transport: shared memory between the " << local << " local rank(s)\n";
    if (reduces(call.collective)) {
      out << "  algorithm: " << explainSharedMemoryAllreduce(call.bytes, local, t.runnableCpus(), settings) << "\n";
    } else {
      out << "  algorithm: every rank copies through the shared slots (one schedule for this collective)\n";
    }
    return out.str();
  }
  // GPU buffers on one host: braid's kernels when every GPU reaches every other, else staging.
  const bool enoughGpus = !t.gpus.empty();
  const bool channel = enoughGpus && t.allP2p();
  const bool nvlink = t.allNvlink();
  // Rank r runs on GPU r % GPUs, as the launchers and braid's own tools place them.
  const bool sharesGpu = enoughGpus && local > static_cast<int>(t.gpus.size());
  const bool sharedPath = channel && tuning::chooseSharedGpuPath(sharesGpu, t.mpsServer, settings);
  // Every rank a process on the one GPU: the leader path (algorithms/device/leader.hpp).
  const bool leader = sharedPath && t.gpus.size() == 1;
  const char* leaderPath =
      "the leader path: rank 0 maps every rank's buffers by CUDA IPC and does each call's GPU work, the other "
      "processes' streams only wait, so the GPU switches no context per call";
  const std::string link = nvlink ? "NVLink" : "PCIe peer access";
  out << "  transport: "
      << (sharedPath ? "cuda_ipc workspaces (over " + link + " between GPUs), steps ordered by the host"
          : channel  ? "cuda_ipc (braid's kernels over " + link + ")"
                     : std::string(enoughGpus ? "staging through pinned host memory: not every pair of GPUs has peer "
                                                 "access"
                                              : "none: this machine has no GPU"))
      << "\n";
  if (!enoughGpus) return out.str();
  if (sharesGpu) {
    out << "  note: " << local << " ranks on " << t.gpus.size() << " GPU(s): several ranks share a GPU; "
        << (t.mpsServer ? "an MPS server runs, so their kernels run side by side"
                        : "without MPS their kernels take turns in time slices (~2 ms)")
        << "; "
        << (leader       ? leaderPath
            : sharedPath ? "the shared-GPU path: no kernel waits for another rank's"
                         : "braid's kernels (BRAID_CUDA_SHARED_GPU or BRAID_ALGO)")
        << "\n";
  }
  if (call.collective == "allreduce") {
    // Launchers start ranks as processes: those sharing one of several GPUs stage their small allreduces.
    // The lowest NVLink generation of the GPUs, by their architecture; a described machine does not say its PCIe
    // generation (0: the measured one).
    int generation = nvlink ? std::numeric_limits<int>::max() : 0;
    for (const topology::Gpu& g : t.gpus) {
      if (nvlink) generation = std::min(generation, topology::nvlinkGeneration(g.ccMajor, g.ccMinor));
    }
    const std::string d = explainGpuAllreduce(call.bytes, local,
                                              {.peerAccess = channel,
                                               .nvlink = nvlink,
                                               .sharedPath = sharedPath,
                                               .processes = sharesGpu && !leader,
                                               .gpus = std::min(local, static_cast<int>(t.gpus.size())),
                                               .linkGeneration = generation},
                                              settings);
    out << "  algorithm: " << d << (leader && d.rfind("shared:", 0) == 0 ? strCat(" (", leaderPath, ")") : "") << "\n";
  } else if (leader && call.collective != "barrier" && deviceSchedule(call.collective).rfind("staged", 0) != 0) {
    out << "  algorithm: shared: " << leaderPath << "\n";
  } else if (sharedPath && call.collective != "barrier" && deviceSchedule(call.collective).rfind("staged", 0) != 0) {
    out << "  algorithm: shared: each rank copies its blocks into its workspace, the host meets the peers, then "
           "each GPU copies (or reduces) what it receives from every rank's workspace\n";
  } else {
    out << "  algorithm: " << (channel ? deviceSchedule(call.collective) : deviceSchedule("sendrecv")) << "\n";
  }
  return out.str();
}

}  // namespace braid::core
