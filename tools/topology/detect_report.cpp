#include "topology/detect_report.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "topology/units_text.hpp"

namespace braid::tools {

namespace {

// One cell of the GPU matrix: NV (NVLink), P2P with the driver's rank (PCIe), or -- (no peer access).
std::string linkCell(const topology::Topology& t, int a, int b) {
  if (a == b) return "X";
  const topology::GpuPair* p = t.pair(a, b);
  if (p == nullptr || !p->p2p) return "--";
  if (p->nvlink) return p->nvlinks > 0 ? "NV" + std::to_string(p->nvlinks) : std::string("NV");
  return "P2P" + (p->perfRank >= 0 ? std::to_string(p->perfRank) : std::string("?"));
}

// What NVML told of a GPU's health, on one line; empty when it told nothing.
std::string healthText(const topology::Gpu& g) {
  std::string text;
  auto part = [&](const std::string& p) { text += (text.empty() ? "" : "; ") + p; };
  if (g.smClockMaxMhz > 0) {
    part("SM clock " + std::to_string(g.smClockMhz) + " MHz (max " + std::to_string(g.smClockMaxMhz) + ")" +
         (g.memClockMaxMhz > 0 ? ", memory up to " + std::to_string(g.memClockMaxMhz) + " MHz" : std::string()));
  }
  if (g.ecc == 1) {
    part("ECC on" +
         (g.eccUncorrected >= 0 ? ", " + std::to_string(g.eccUncorrected) + " uncorrected error(s)" : std::string()));
  } else if (g.ecc == 0) {
    part("ECC off");
  }
  if (g.pcieMaxWidth > 0) part("PCIe x" + std::to_string(g.pcieWidth) + " of x" + std::to_string(g.pcieMaxWidth));
  if (g.dmaBuf == 1) part("dma-buf");
  return text;
}

}  // namespace

std::string transportPlan(const topology::Topology& t) {
  std::ostringstream out;
  if (t.gpus.size() >= 2) {
    if (t.allNvlink()) {
      out << "  GPU buffers between local GPUs: braid's kernels over NVLink (cuda_ipc)\n";
    } else if (t.allP2p()) {
      out << "  GPU buffers between local GPUs: braid's kernels over PCIe peer access (cuda_ipc)\n";
    } else {
      out << "  GPU buffers between local GPUs: staged through pinned host memory (some pairs have no P2P; the\n"
             "    kernels run only where every pair of a communicator's GPUs reaches each other)\n";
    }
  } else if (t.gpus.size() == 1) {
    out << "  GPU buffers: ranks sharing the one GPU use braid's kernels on it (cuda_ipc)\n";
  }
  out << "  host buffers between local ranks: shared memory";
  if (t.shmBytes > 0) out << " (/dev/shm " << sizeText(t.shmBytes) << ")";
  out << "\n";
  if (const topology::Nic* nic = t.fastestNic()) {
    out << "  between hosts: TCP over " << nic->name << " (" << linkSpeedText(nic->speedMbps) << ", MTU " << nic->mtu
        << ")";
    if (!nic->rdmaDevices.empty()) out << "; RDMA device " << nic->rdmaDevices.front() << " present, not used yet";
    out << "\n";
  } else {
    out << "  between hosts: no network interface is up besides loopback\n";
  }
  return out.str();
}

std::string detectReport(const topology::Topology& t) {
  std::ostringstream out;
  out << "host " << (t.hostname.empty() ? "(unnamed)" : t.hostname) << ": "
      << (t.cpuModel.empty() ? "CPU model unknown" : t.cpuModel) << "\n";
  out << "  " << t.sockets << " socket(s), ";
  if (t.cores > 0) out << t.cores << " cores, ";
  out << t.logicalCpus << " logical CPUs (" << t.usableCpus << " usable here), " << (t.numa.empty() ? 1 : t.numa.size())
      << " NUMA node(s), " << gibText(t.memoryBytes) << " memory\n";
  if (t.l2CacheBytes > 0 || t.l3CacheBytes > 0) {
    out << "  caches:";
    if (t.l2CacheBytes > 0) out << " L2 " << (t.l2CacheBytes >> 10) << " KiB";
    if (t.l3CacheBytes > 0) out << " L3 " << (t.l3CacheBytes >> 10) << " KiB";
    out << " each\n";
  }
  if (!t.readBy.empty()) out << "  read by " << t.readBy << "\n";
  for (const topology::NumaNode& n : t.numa) {
    out << "  NUMA " << n.id << ": " << n.cpus.size() << " CPUs, " << gibText(n.memoryBytes) << "\n";
  }
  if (!t.container.empty() || t.cgroupCpus > 0 || t.cgroupMemoryBytes > 0) {
    out << "  limits:";
    if (!t.container.empty()) out << " container " << t.container << ";";
    if (t.cgroupCpus > 0) {
      char cpus[32];
      std::snprintf(cpus, sizeof cpus, "%.1f", t.cgroupCpus);
      out << " cgroup CPUs " << cpus << ";";
    }
    if (t.cgroupMemoryBytes > 0) out << " cgroup memory " << gibText(t.cgroupMemoryBytes) << ";";
    out << "\n";
  }
  out << "CUDA: driver " << (t.cudaDriverVersion > 0 ? cudaVersionText(t.cudaDriverVersion) : "none")
      << ", braid built with " << (t.cudaRuntimeVersion > 0 ? cudaVersionText(t.cudaRuntimeVersion) : "no CUDA")
      << "\n";
  if (t.gpus.empty()) {
    out << "GPUs: none\n";
  } else {
    out << "GPUs:\n";
    for (const topology::Gpu& g : t.gpus) {
      out << "  " << g.index << "  " << g.name << "  sm_" << g.ccMajor << g.ccMinor << "  " << g.sms << " SMs  "
          << gibText(g.memoryBytes) << "  PCI " << (g.pciBusId.empty() ? "?" : g.pciBusId);
      if (g.numaNode >= 0) out << "  NUMA " << g.numaNode;
      if (g.migEnabled) out << "  MIG";
      out << "\n";
      const std::string health = healthText(g);
      if (!health.empty()) out << "     " << health << "\n";
    }
    if (t.gpus.size() >= 2) {
      out << "GPU links (NV#: # NVLinks; P2Pn: peer access over PCIe, the driver's rank n; --: none):\n        ";
      for (const topology::Gpu& g : t.gpus) {
        char head[16];
        std::snprintf(head, sizeof head, "%-6s", ("GPU" + std::to_string(g.index)).c_str());
        out << head;
      }
      out << "\n";
      for (const topology::Gpu& a : t.gpus) {
        char row[16];
        std::snprintf(row, sizeof row, "  %-6s", ("GPU" + std::to_string(a.index)).c_str());
        out << row;
        for (const topology::Gpu& b : t.gpus) {
          char cell[16];
          std::snprintf(cell, sizeof cell, "%-6s", linkCell(t, a.index, b.index).c_str());
          out << cell;
        }
        out << "\n";
      }
    }
  }
  out << "NICs:\n";
  bool any = false;
  for (const topology::Nic& nic : t.nics) {
    if (nic.loopback) continue;
    any = true;
    out << "  " << nic.name << "  " << (nic.up ? "up" : "down") << "  " << linkSpeedText(nic.speedMbps) << "  MTU "
        << nic.mtu;
    if (!nic.driver.empty()) out << "  " << nic.driver;
    if (nic.numaNode >= 0) out << "  NUMA " << nic.numaNode;
    for (const std::string& ib : nic.rdmaDevices) out << "  RDMA " << ib;
    out << "\n";
  }
  if (!any) out << "  none besides loopback\n";
  bool rdma = false;
  for (const topology::Nic& nic : t.nics) rdma |= !nic.rdmaDevices.empty();
  if (rdma && !t.gpus.empty()) {
    const bool dmaBuf = std::all_of(t.gpus.begin(), t.gpus.end(), [](const topology::Gpu& g) { return g.dmaBuf == 1; });
    out << "GPUDirect RDMA: " << (t.nvidiaPeermem ? "nvidia_peermem loaded" : "nvidia_peermem not loaded")
        << (dmaBuf ? ", dma-buf on every GPU" : "") << "\n";
  }
  out << "braid will use:\n" << transportPlan(t);
  // No trailing blanks (the matrix pads its cells): the report is compared line by line in tests.
  std::istringstream lines(out.str());
  std::string line, text;
  while (std::getline(lines, line)) {
    line.erase(line.find_last_not_of(' ') + 1);
    text += line + "\n";
  }
  return text;
}

}  // namespace braid::tools
