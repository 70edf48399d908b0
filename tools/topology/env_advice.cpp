#include "topology/env_advice.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "topology/units_text.hpp"

namespace braid::tools {

namespace {

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// Up NICs other than loopback, fastest first.
std::vector<const topology::Nic*> usableNics(const topology::Topology& t) {
  std::vector<const topology::Nic*> nics;
  for (const topology::Nic& nic : t.nics) {
    if (nic.up && !nic.loopback) nics.push_back(&nic);
  }
  std::stable_sort(nics.begin(), nics.end(),
                   [](const topology::Nic* a, const topology::Nic* b) { return a->speedMbps > b->speedMbps; });
  return nics;
}

}  // namespace

std::vector<EnvAdvice> adviseEnv(const topology::Topology& t, int ranksPerNode) {
  std::vector<EnvAdvice> advice;
  const int ranks = ranksPerNode > 0 ? ranksPerNode : std::max<int>(1, static_cast<int>(t.gpus.size()));
  if (!t.gpus.empty()) {
    std::set<std::pair<int, int>> ccs;
    for (const topology::Gpu& g : t.gpus) ccs.insert({g.ccMajor, g.ccMinor});
    std::vector<std::string> list;
    for (const auto& [major, minor] : ccs) list.push_back(std::to_string(major) + "." + std::to_string(minor));
    advice.push_back({"TORCH_CUDA_ARCH_LIST", join(list, ";"),
                      "the compute capabilities of the GPUs here (" + t.gpus.front().name +
                          (ccs.size() > 1 ? " and others" : "") +
                          "): PyTorch extensions build for these only, not for every architecture"});
    advice.push_back({"CUDA_DEVICE_MAX_CONNECTIONS", "32",
                      "more hardware work queues than CUDA's default 8, so collectives on their own streams do not "
                      "queue behind compute (Megatron-LM's tensor-parallel overlap wants 1 instead)"});
  }
  // CPUs this process may use, bounded by the cgroup's quota, shared by the local ranks.
  double cpus = t.usableCpus > 0 ? t.usableCpus : t.logicalCpus;
  if (t.cgroupCpus > 0 && t.cgroupCpus < cpus) cpus = t.cgroupCpus;
  const int perRank = std::max(1, static_cast<int>(cpus) / ranks);
  advice.push_back({"OMP_NUM_THREADS", std::to_string(perRank),
                    std::to_string(static_cast<int>(cpus)) + " usable CPUs shared by " + std::to_string(ranks) +
                        " local rank(s): without it every rank's OpenMP and MKL pools take all of them and fight"});
  if (t.gpus.size() >= 2 && !t.allP2p()) {
    std::vector<std::string> broken;
    for (const topology::GpuPair& p : t.gpuPairs) {
      if (!p.p2p) broken.push_back(std::to_string(p.a) + "-" + std::to_string(p.b));
    }
    advice.push_back({"NCCL_P2P_DISABLE", "1",
                      "GPU pairs " + join(broken, ", ") +
                          " have no peer access: NCCL would fail or hang on them (braid stages those pairs itself)"});
  }
  const auto nics = usableNics(t);
  if (!nics.empty()) {
    const topology::Nic& best = *nics.front();
    const std::string why = best.name + " is the fastest interface that is up (" + linkSpeedText(best.speedMbps) +
                            (nics.size() > 1 ? ", of " + std::to_string(nics.size()) : "") + ")";
    advice.push_back({"BRAID_IFNAME", best.name, why + ": braid's TCP transport between hosts uses it"});
    advice.push_back({"NCCL_SOCKET_IFNAME", best.name, why + ": NCCL's bootstrap and socket transport use it"});
    std::vector<std::string> hcas;
    for (const topology::Nic* nic : nics) {
      for (const std::string& ib : nic->rdmaDevices) hcas.push_back(ib);
    }
    if (!hcas.empty()) {
      advice.push_back({"NCCL_IB_HCA", join(hcas, ","), "the RDMA devices on interfaces that are up"});
    }
  }
  return advice;
}

std::vector<std::string> bindingNotes(const topology::Topology& t) {
  std::vector<std::string> notes;
  if (t.numa.size() < 2) return notes;
  bool known = false;
  for (const topology::Gpu& g : t.gpus) known |= g.numaNode >= 0;
  if (!known) return notes;
  notes.push_back("# " + std::to_string(t.numa.size()) +
                  " NUMA nodes: run each local rank on its GPU's node (with braid run, torchrun or mpirun):");
  for (const topology::Gpu& g : t.gpus) {
    if (g.numaNode < 0) continue;
    notes.push_back("#   local rank " + std::to_string(g.index) + " (GPU " + std::to_string(g.index) +
                    "): numactl --cpunodebind=" + std::to_string(g.numaNode) +
                    " --membind=" + std::to_string(g.numaNode));
  }
  return notes;
}

std::string envScript(const std::vector<EnvAdvice>& advice, const std::vector<std::string>& notes) {
  std::ostringstream out;
  for (const std::string& n : notes) out << n << "\n";
  for (const EnvAdvice& a : advice) {
    out << "# " << a.reason << "\n";
    out << "export " << a.name << "='" << a.value << "'\n";
  }
  return out.str();
}

}  // namespace braid::tools
