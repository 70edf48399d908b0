// The host half of detect(): CPUs, NUMA nodes, memory, cgroup limits, /dev/shm, containers and NICs. hwloc reads the
// CPUs, caches and NUMA nodes of a live host (hwloc_host.cpp); procfs and sysfs the rest, and the CPUs too where hwloc
// cannot or the host is a fake tree. Every read tolerates a missing file (containers hide much of sysfs): what cannot
// be read stays at its "unknown" value.
#include <sched.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "base/error.hpp"
#include "base/logging.hpp"
#include "topology/cgroup_limits.hpp"
#include "topology/hwloc_host.hpp"
#include "topology/topology.hpp"

namespace braid::topology {

namespace {

namespace fs = std::filesystem;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

long readLong(const std::string& path, long fallback) {
  const std::string text = readFile(path);
  if (text.empty()) return fallback;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  return end == text.c_str() ? fallback : v;
}

/// "0-3,8,10-11" -> {0,1,2,3,8,10,11}.
std::vector<int> parseCpuList(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream s(text);
  std::string part;
  while (std::getline(s, part, ',')) {
    if (part.empty()) continue;
    const auto dash = part.find('-');
    const int lo = std::atoi(part.substr(0, dash).c_str());
    const int hi = dash == std::string::npos ? lo : std::atoi(part.substr(dash + 1).c_str());
    for (int c = lo; c <= hi && c - lo < 1 << 16; ++c) cpus.push_back(c);
  }
  return cpus;
}

/// The value of "Key:   123 kB" in a meminfo-style file, in bytes; 0 when absent.
std::uint64_t meminfoBytes(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::stringstream s(line.substr(key.size() + 1));
    std::uint64_t kb = 0;
    s >> kb;
    return kb * 1024;
  }
  return 0;
}

// Node meminfo lines read "Node 0 MemTotal:  123 kB".
std::uint64_t nodeMemBytes(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto at = line.find("MemTotal:");
    if (at == std::string::npos) continue;
    std::stringstream s(line.substr(at + 9));
    std::uint64_t kb = 0;
    s >> kb;
    return kb * 1024;
  }
  return 0;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string linkTarget(const std::string& path) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(path, ec);
  return ec ? std::string() : target.filename().string();
}

// The CPUs this process may run on; a fake tree's are all of its online ones.
void readAffinity(Topology& t, bool live) {
  t.usableCpus = t.logicalCpus;
  if (!live) return;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    t.usableCpus = CPU_COUNT(&set);
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) t.usableCpuIds.push_back(c);
    }
  }
}

void readCpus(Topology& t, const std::string& root, bool live) {
  const std::string cpuDir = root + "/sys/devices/system/cpu";
  t.logicalCpus = static_cast<int>(parseCpuList(readFile(cpuDir + "/online")).size());
  if (t.logicalCpus == 0 && live) t.logicalCpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::set<long> packages;
  for (const std::string& name : entries(cpuDir)) {
    if (name.rfind("cpu", 0) != 0 || name.size() < 4 || !std::isdigit(static_cast<unsigned char>(name[3]))) continue;
    const long id = readLong(cpuDir + "/" + name + "/topology/physical_package_id", -1);
    if (id >= 0) packages.insert(id);
  }
  t.sockets = packages.empty() ? 1 : static_cast<int>(packages.size());
  std::ifstream cpuinfo(root + "/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) t.cpuModel = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
}

void readNuma(Topology& t, const std::string& root) {
  const std::string nodeDir = root + "/sys/devices/system/node";
  for (const std::string& name : entries(nodeDir)) {
    if (name.rfind("node", 0) != 0 || name.size() < 5 || !std::isdigit(static_cast<unsigned char>(name[4]))) continue;
    NumaNode node;
    node.id = std::atoi(name.c_str() + 4);
    node.cpus = parseCpuList(readFile(nodeDir + "/" + name + "/cpulist"));
    node.memoryBytes = nodeMemBytes(nodeDir + "/" + name + "/meminfo");
    t.numa.push_back(std::move(node));
  }
  std::sort(t.numa.begin(), t.numa.end(), [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
}

void readLimits(Topology& t, const std::string& root) {
  t.memoryBytes = meminfoBytes(root + "/proc/meminfo", "MemTotal");
  const CgroupLimits limits = readCgroupLimits(root);
  t.cgroupCpus = limits.cpus;
  // v1 reports "no limit" as a huge number (PAGE_COUNTER_MAX pages): a limit above the memory there is none.
  if (limits.memoryBytes > 0 && (t.memoryBytes == 0 || limits.memoryBytes < t.memoryBytes)) {
    t.cgroupMemoryBytes = limits.memoryBytes;
  }
  struct statvfs shm {};
  if (statvfs((root + "/dev/shm").c_str(), &shm) == 0) {
    t.shmBytes = static_cast<std::uint64_t>(shm.f_blocks) * shm.f_frsize;
  }
}

void readContainer(Topology& t, const std::string& root, bool live) {
  std::error_code ec;
  if (fs::exists(root + "/.dockerenv", ec)) {
    t.container = "docker";
  } else if (fs::exists(root + "/run/.containerenv", ec)) {
    t.container = "podman";
  } else if (live && std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {
    t.container = "kubernetes";
  }
  if (!t.container.empty()) return;
  const std::string cgroup = readFile(root + "/proc/1/cgroup");
  if (cgroup.find("kubepods") != std::string::npos) {
    t.container = "kubernetes";
  } else if (cgroup.find("docker") != std::string::npos) {
    t.container = "docker";
  } else if (cgroup.find("lxc") != std::string::npos) {
    t.container = "lxc";
  } else if (readFile(root + "/proc/version").find("gVisor") != std::string::npos) {
    t.container = "gvisor";
  }
}

void readNics(Topology& t, const std::string& root) {
  const std::string netDir = root + "/sys/class/net";
  for (const std::string& name : entries(netDir)) {
    const std::string dir = netDir + "/" + name;
    Nic nic;
    nic.name = name;
    nic.loopback = name == "lo" || readLong(dir + "/type", 0) == 772;  // ARPHRD_LOOPBACK
    const std::string state = readFile(dir + "/operstate");
    nic.up = state == "up" || (nic.loopback && state == "unknown");
    nic.mtu = static_cast<int>(readLong(dir + "/mtu", 0));
    const long speed = readLong(dir + "/speed", -1);
    nic.speedMbps = speed > 0 ? static_cast<int>(speed) : -1;
    nic.driver = linkTarget(dir + "/device/driver");
    nic.pciBusId = linkTarget(dir + "/device");
    nic.numaNode = static_cast<int>(readLong(dir + "/device/numa_node", -1));
    t.nics.push_back(std::move(nic));
  }
  // RDMA devices name the netdevs of their ports in device/net/.
  const std::string ibDir = root + "/sys/class/infiniband";
  for (const std::string& ib : entries(ibDir)) {
    for (const std::string& netdev : entries(ibDir + "/" + ib + "/device/net")) {
      for (Nic& nic : t.nics) {
        if (nic.name == netdev) nic.rdmaDevices.push_back(ib);
      }
    }
  }
}

// The host, and where hwloc read it with `devices` what it says of PCI devices (for the GPUs, which detectGpus adds
// later).
Topology hostAndPci(const std::string& root, bool devices, HwlocView& pci) {
  const bool live = root.empty();
  Topology t;
  if (live) {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) t.hostname = host;
  } else {
    t.hostname = readFile(root + "/proc/sys/kernel/hostname");
  }
  std::string why = "a described host is read from its files";
  if (live) pci = readHwloc(t, HwlocSource{.devices = devices}, why);
  if (why.empty()) {
    t.readBy = hwlocVersion();
  } else {
    if (live) {
      static std::once_flag warned;
      std::call_once(warned,
                     [&] { logLine(LogLevel::kWarn, -1, strCat("reading this host's CPUs from sysfs: ", why)); });
    }
    readCpus(t, root, live);
    readNuma(t, root);
    t.readBy = "sysfs";
  }
  readAffinity(t, live);
  readLimits(t, root);
  readContainer(t, root, live);
  readNics(t, root);
  for (Nic& nic : t.nics) nic.numaNode = numaOfPci(pci, nic.pciBusId, nic.numaNode);
  std::error_code ec;
  t.nvidiaPeermem = fs::exists(root + "/sys/module/nvidia_peermem", ec);
  t.iommu = !entries(root + "/sys/class/iommu").empty();
  t.mpsServer = mpsServerRunning(root);
  return t;
}

}  // namespace

Topology detectHost(const std::string& root) {
  HwlocView pci;
  return hostAndPci(root, false, pci);
}

bool mpsServerRunning(const std::string& root) {
  // CUDA's variable, not a braid knob; a fake tree (root set) is judged without this process's environment.
  const char* dir = root.empty() ? std::getenv("CUDA_MPS_PIPE_DIRECTORY") : nullptr;
  const std::string path = root + (dir != nullptr && *dir != '\0' ? dir : "/tmp/nvidia-mps") + "/control";
  std::error_code ec;
  return fs::is_fifo(path, ec);
}

Topology detect(const std::string& root) {
  HwlocView pci;
  Topology t = hostAndPci(root, true, pci);
  if (root.empty()) detectGpus(t, root);
  for (Gpu& gpu : t.gpus) gpu.numaNode = numaOfPci(pci, gpu.pciBusId, gpu.numaNode);
  return t;
}

const GpuPair* Topology::pair(int a, int b) const {
  for (const GpuPair& p : gpuPairs) {
    if ((p.a == a && p.b == b) || (p.a == b && p.b == a)) return &p;
  }
  return nullptr;
}

bool Topology::allNvlink() const {
  if (gpus.size() < 2) return false;
  for (std::size_t a = 0; a < gpus.size(); ++a) {
    for (std::size_t b = a + 1; b < gpus.size(); ++b) {
      const GpuPair* p = pair(gpus[a].index, gpus[b].index);
      if (p == nullptr || !p->nvlink) return false;
    }
  }
  return true;
}

bool Topology::allP2p() const {
  for (std::size_t a = 0; a < gpus.size(); ++a) {
    for (std::size_t b = a + 1; b < gpus.size(); ++b) {
      const GpuPair* p = pair(gpus[a].index, gpus[b].index);
      if (p == nullptr || !p->p2p) return false;
    }
  }
  return true;
}

int Topology::runnableCpus() const {
  const int cpus = usableCpus > 0 ? usableCpus : logicalCpus;
  const int quota = wholeCpus(cgroupCpus);
  return quota > 0 && (cpus <= 0 || quota < cpus) ? quota : cpus;
}

const Nic* Topology::fastestNic() const {
  const Nic* best = nullptr;
  for (const Nic& nic : nics) {
    if (!nic.up || nic.loopback) continue;
    if (best == nullptr || nic.speedMbps > best->speedMbps) best = &nic;
  }
  return best;
}

}  // namespace braid::topology
