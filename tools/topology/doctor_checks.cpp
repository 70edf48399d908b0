#include "topology/doctor_checks.hpp"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "topology/units_text.hpp"

namespace braid::tools {

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kInfo:
      return "info";
    case Verdict::kWarn:
      return "warn";
    case Verdict::kFail:
      return "FAIL";
  }
  return "?";
}

namespace {

std::string slowdownText(std::uint64_t bits) {
  std::string text;
  auto add = [&](std::uint64_t bit, const char* why) {
    if ((bits & bit) != 0) text += (text.empty() ? "" : ", ") + std::string(why);
  };
  add(topology::kSlowdownHw, "hardware slowdown");
  add(topology::kSlowdownHwThermal, "hardware thermal slowdown");
  add(topology::kSlowdownSwThermal, "software thermal slowdown");
  add(topology::kSlowdownHwPowerBrake, "power brake");
  add(topology::kSlowdownSwPowerCap, "power cap");
  return text;
}

// Uncorrected ECC errors (results may be wrong), clocks held down by heat or power, and a PCIe link running on
// fewer lanes than it could: each worth a look before blaming the collectives.
void checkGpuHealth(const topology::Topology& t, std::vector<Check>& checks) {
  bool known = false;
  bool healthy = true;
  for (const topology::Gpu& g : t.gpus) {
    const std::string gpu = "GPU " + std::to_string(g.index);
    known |= g.eccUncorrected >= 0 || g.smClockMaxMhz > 0 || g.pcieMaxWidth > 0;
    if (g.eccUncorrected > 0) {
      healthy = false;
      checks.push_back({"gpu-health", Verdict::kFail,
                        gpu + " has " + std::to_string(g.eccUncorrected) +
                            " uncorrected ECC error(s) since the driver loaded: its results cannot be trusted "
                            "(drain the node, reset the GPU, and have it checked if errors come back)"});
    }
    const std::string slow = slowdownText(g.slowdown);
    if (!slow.empty()) {
      healthy = false;
      checks.push_back({"gpu-health", Verdict::kWarn,
                        gpu + " is held down now by: " + slow +
                            (g.smClockMaxMhz > 0 ? " (SM clock " + std::to_string(g.smClockMhz) + " of " +
                                                       std::to_string(g.smClockMaxMhz) + " MHz)"
                                                 : std::string()) +
                            ": check cooling and power limits (nvidia-smi -q -d PERFORMANCE)"});
    }
    if (g.pcieWidth > 0 && g.pcieMaxWidth > 0 && g.pcieWidth < g.pcieMaxWidth) {
      healthy = false;
      checks.push_back({"gpu-health", Verdict::kWarn,
                        gpu + "'s PCIe link runs on x" + std::to_string(g.pcieWidth) + " of x" +
                            std::to_string(g.pcieMaxWidth) +
                            ": host copies (and PCIe peer traffic) run at a fraction of their speed (reseat the "
                            "card, or check the slot and riser)"});
    }
  }
  if (known && healthy) {
    checks.push_back({"gpu-health", Verdict::kOk,
                      "no uncorrected ECC errors, no thermal or power slowdown, PCIe links at full width"});
  }
}

}  // namespace

std::vector<Check> checkTopology(const topology::Topology& t) {
  std::vector<Check> checks;
  // 1. Driver and toolkit: a runtime newer than the driver's CUDA version cannot run its kernels (minor-version
  // compatibility holds within a major version only when the driver is at least that major's first release).
  if (t.cudaRuntimeVersion == 0) {
    checks.push_back({"cuda", Verdict::kInfo, "braid was built without CUDA: host buffers only"});
  } else if (t.cudaDriverVersion == 0) {
    checks.push_back(
        {"cuda", t.gpus.empty() ? Verdict::kInfo : Verdict::kFail,
         t.gpus.empty() ? "no CUDA driver: host buffers only" : "GPUs are listed but no CUDA driver answers"});
  } else if (t.cudaDriverVersion / 1000 < t.cudaRuntimeVersion / 1000) {
    checks.push_back({"cuda", Verdict::kFail,
                      "the driver supports CUDA " + cudaVersionText(t.cudaDriverVersion) +
                          " but braid was built with CUDA " + cudaVersionText(t.cudaRuntimeVersion) +
                          ": its kernels will not load. Update the driver, or build braid with a CUDA " +
                          std::to_string(t.cudaDriverVersion / 1000) + ".x toolkit"});
  } else {
    checks.push_back({"cuda", Verdict::kOk,
                      "driver CUDA " + cudaVersionText(t.cudaDriverVersion) + " runs braid's CUDA " +
                          cudaVersionText(t.cudaRuntimeVersion) + " kernels"});
  }
  // 2. GPU peer access.
  if (t.gpus.size() >= 2) {
    std::string broken;
    for (const topology::GpuPair& p : t.gpuPairs) {
      if (!p.p2p) broken += (broken.empty() ? "" : ", ") + std::to_string(p.a) + "-" + std::to_string(p.b);
    }
    if (broken.empty()) {
      checks.push_back(
          {"p2p", Verdict::kOk,
           std::string("every pair of GPUs has peer access") + (t.allNvlink() ? " over NVLink" : " (PCIe)")});
    } else {
      checks.push_back({"p2p", Verdict::kWarn,
                        "no peer access between GPUs " + broken +
                            ": collectives spanning them go through host memory (slower). On PCIe machines this is "
                            "often ACS or an IOMMU in the way" +
                            (t.iommu ? " (an IOMMU is on here: try iommu=pt, or disable ACS in the BIOS)" : "")});
    }
  }
  // 2a. Ranks sharing a GPU: where there is one GPU, every multi-rank job on GPU buffers shares it.
  if (t.gpus.size() == 1) {
    checks.push_back(
        {"shared-gpu", Verdict::kInfo,
         std::string("one GPU: ranks of a job share it (rank r on GPU r % GPUs). ") +
             (t.mpsServer ? "An MPS server runs, so their kernels run side by side and braid's collective kernels "
                            "serve them"
                          : "Without MPS their kernels take turns in ~2 ms time slices, so braid's shared-GPU path "
                            "serves them (no kernel waits for another rank's; BRAID_CUDA_SHARED_GPU). NCCL refuses "
                            "two ranks on one GPU")});
  }
  // 2b. Health: what NVML says of each GPU (nothing when NVML could not be asked).
  checkGpuHealth(t, checks);
  // 3. MIG.
  for (const topology::Gpu& g : t.gpus) {
    if (g.migEnabled) {
      checks.push_back({"mig", Verdict::kWarn,
                        "GPU " + std::to_string(g.index) + " (" + g.name +
                            ") is a MIG instance: MIG instances have no peer access or NVLink, so collectives "
                            "between them are staged through host memory"});
      break;
    }
  }
  // 4. Shared memory: local ranks exchange host buffers through /dev/shm; Docker gives 64 MiB by default.
  if (t.shmBytes == 0) {
    checks.push_back({"shm", Verdict::kWarn, "cannot read the size of /dev/shm: local ranks need it"});
  } else if (t.shmBytes < (std::uint64_t{1} << 30)) {
    checks.push_back({"shm", Verdict::kWarn,
                      "/dev/shm is " + sizeText(t.shmBytes) +
                          ": too small for many local ranks and large host tensors (PyTorch's data loaders use it "
                          "too). In Docker: --shm-size=16g or --ipc=host"});
  } else {
    checks.push_back({"shm", Verdict::kOk, "/dev/shm has " + sizeText(t.shmBytes)});
  }
  // 5. The network between hosts.
  if (const topology::Nic* nic = t.fastestNic()) {
    if (nic->speedMbps > 0 && nic->speedMbps < 10000) {
      checks.push_back({"network", Verdict::kWarn,
                        "the fastest interface, " + nic->name + ", runs at " + std::to_string(nic->speedMbps) +
                            " Mb/s: collectives between hosts will be limited to ~" +
                            std::to_string(nic->speedMbps / 8) + " MB/s"});
    } else if (nic->rdmaDevices.empty() && nic->speedMbps >= 100000 && nic->mtu < 9000) {
      checks.push_back({"network", Verdict::kWarn,
                        nic->name + " runs at " + std::to_string(nic->speedMbps / 1000) + " Gb/s with MTU " +
                            std::to_string(nic->mtu) + ": TCP at this speed wants jumbo frames (MTU 9000)"});
    } else {
      checks.push_back({"network", Verdict::kOk,
                        nic->name +
                            (nic->speedMbps > 0 ? " at " + std::to_string(nic->speedMbps / 1000) + " Gb/s"
                                                : std::string(" (speed unknown)")) +
                            ", MTU " + std::to_string(nic->mtu)});
    }
  } else {
    checks.push_back({"network", Verdict::kInfo, "no interface is up besides loopback: one host only"});
  }
  // 6. GPUDirect RDMA: through nvidia_peermem, or through dma-buf where every GPU can export its memory so.
  bool rdma = false;
  for (const topology::Nic& nic : t.nics) rdma |= nic.up && !nic.rdmaDevices.empty();
  if (rdma && !t.gpus.empty()) {
    const bool dmaBuf = std::all_of(t.gpus.begin(), t.gpus.end(), [](const topology::Gpu& g) { return g.dmaBuf == 1; });
    if (t.nvidiaPeermem) {
      checks.push_back({"gpudirect-rdma", Verdict::kOk, "nvidia_peermem is loaded: RDMA NICs can reach GPU memory"});
    } else if (dmaBuf) {
      checks.push_back({"gpudirect-rdma", Verdict::kOk,
                        "every GPU exports its memory as dma-buf: RDMA NICs can reach it without nvidia_peermem"});
    } else {
      checks.push_back({"gpudirect-rdma", Verdict::kWarn,
                        "RDMA NICs and GPUs, but nvidia_peermem is not loaded and the GPUs offer no dma-buf: NICs "
                        "cannot read GPU memory directly (modprobe nvidia_peermem)"});
    }
  }
  // 6b. An IOMMU between GPUs that talk over PCIe translates (and on some platforms drops) their peer traffic.
  if (t.iommu && t.gpus.size() >= 2 && t.allP2p() && !t.allNvlink()) {
    checks.push_back({"iommu", Verdict::kWarn,
                      "an IOMMU is on and GPUs reach each other over PCIe: their peer traffic goes through it "
                      "(slower; boot with iommu=pt, or disable ACS, if braid's P2P probe or bandwidth disappoints)"});
  }
  // 7. cgroup limits against the work one rank per GPU brings.
  const int ranks = t.gpus.empty() ? 1 : static_cast<int>(t.gpus.size());
  if (t.cgroupCpus > 0 && t.cgroupCpus < ranks * 2) {
    char cpus[32];
    std::snprintf(cpus, sizeof cpus, "%.1f", t.cgroupCpus);
    checks.push_back({"cpu-quota", Verdict::kWarn,
                      std::string("the cgroup allows ") + cpus + " CPUs for " + std::to_string(ranks) +
                          " rank(s): each rank's progress thread and data loading compete for them"});
  }
  // 8. NUMA: GPUs on several nodes want their ranks bound.
  if (t.numa.size() >= 2 && !t.gpus.empty()) {
    checks.push_back({"numa", Verdict::kInfo,
                      std::to_string(t.numa.size()) +
                          " NUMA nodes: bind each local rank to its GPU's node (`braid env` prints the lines)"});
  }
  return checks;
}

std::vector<Check> checkProcess(const topology::Topology& t) {
  std::vector<Check> checks;
  rlimit memlock{};
  if (getrlimit(RLIMIT_MEMLOCK, &memlock) == 0) {
    if (memlock.rlim_cur == RLIM_INFINITY || memlock.rlim_cur >= (rlim_t{64} << 20)) {
      checks.push_back({"memlock", Verdict::kOk,
                        memlock.rlim_cur == RLIM_INFINITY ? "locked memory is unlimited"
                                                          : "locked memory limit " + sizeText(memlock.rlim_cur)});
    } else {
      checks.push_back({"memlock", Verdict::kWarn,
                        "locked memory is limited to " + std::to_string(memlock.rlim_cur >> 10) +
                            " KiB: pinned staging buffers and RDMA registration need more (ulimit -l unlimited, or "
                            "docker --ulimit memlock=-1)"});
    }
  }
  if (t.numa.size() >= 2) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      int nodes = 0;
      for (const topology::NumaNode& n : t.numa) {
        bool any = false;
        for (int c : n.cpus) any |= c >= 0 && c < CPU_SETSIZE && CPU_ISSET(c, &set);
        nodes += any ? 1 : 0;
      }
      checks.push_back({"numa-binding", nodes <= 1 ? Verdict::kOk : Verdict::kInfo,
                        nodes <= 1 ? "this process runs on one NUMA node"
                                   : "this process may run on " + std::to_string(nodes) +
                                         " NUMA nodes: ranks started like this one are not bound"});
    }
  }
  return checks;
}

std::string doctorReport(const std::string& title, const std::vector<Check>& checks, bool* failed) {
  std::ostringstream out;
  out << "braid doctor: " << title << "\n";
  int warns = 0, fails = 0;
  for (const Check& c : checks) {
    char head[40];
    std::snprintf(head, sizeof head, "  %-5s %-15s ", verdictName(c.verdict), c.name.c_str());
    out << head << c.detail << "\n";
    warns += c.verdict == Verdict::kWarn ? 1 : 0;
    fails += c.verdict == Verdict::kFail ? 1 : 0;
  }
  out << warns << " warning(s), " << fails << " failure(s)\n";
  if (failed != nullptr) *failed = fails > 0;
  return out.str();
}

}  // namespace braid::tools
