// What hardware one host has: pure data. detect() fills it from hwloc, procfs, sysfs and the CUDA runtime; the
// braid command also reads and writes it as JSON (--topology FILE), so that every decision made from it (what
// `braid detect`, `env`, `doctor`, `explain` and the selector say) is tested against fixtures of machines we do not
// have.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::topology {

struct Gpu {
  int index = 0;         ///< CUDA ordinal in this process
  std::string name;      ///< "NVIDIA H200"
  std::string uuid;      ///< "GPU-8c7b..."
  std::string pciBusId;  ///< "0000:00:06.0"
  int ccMajor = 0;       ///< compute capability
  int ccMinor = 0;
  int sms = 0;  ///< multiprocessors
  std::uint64_t memoryBytes = 0;
  int numaNode = -1;        ///< -1: unknown or a single node
  bool migEnabled = false;  ///< MIG mode on (then `index` is a MIG instance)
  // From NVML (0 or -1 where it cannot say):
  int smClockMhz = 0;                ///< the SM clock now
  int smClockMaxMhz = 0;             ///< the highest SM clock the board allows
  int memClockMaxMhz = 0;            ///< the highest memory clock
  std::uint64_t slowdown = 0;        ///< why the clocks are held down now: NVML's clock event reason bits (kSlowdown*)
  int ecc = -1;                      ///< ECC mode: 1 on, 0 off, -1 unknown
  std::int64_t eccUncorrected = -1;  ///< uncorrected ECC errors since the driver loaded; -1 unknown
  int pcieWidth = 0;                 ///< PCIe lanes the link runs on now
  int pcieMaxWidth = 0;              ///< lanes the GPU and its slot could run on
  // From the CUDA driver:
  int dmaBuf = -1;  ///< the GPU can export memory as dma-buf (GPUDirect RDMA without nvidia_peermem); -1 unknown
};

/// NVML's clock event reasons (nvmlClocksEventReason*) that mean the GPU is slowed by something wrong with the
/// machine, not by idleness or a setting.
inline constexpr std::uint64_t kSlowdownSwPowerCap = 0x4;
inline constexpr std::uint64_t kSlowdownHw = 0x8;
inline constexpr std::uint64_t kSlowdownSwThermal = 0x20;
inline constexpr std::uint64_t kSlowdownHwThermal = 0x40;
inline constexpr std::uint64_t kSlowdownHwPowerBrake = 0x80;

/// What the driver says about a pair of GPUs (a < b).
struct GpuPair {
  int a = 0;
  int b = 0;
  bool p2p = false;   ///< cudaDeviceCanAccessPeer both ways
  int perfRank = -1;  ///< the driver's P2P performance rank: 0 is the best link (NVLink), -1 unknown
  bool nvlink = false;
  int nvlinks = 0;  ///< NVLinks between the two (through NVSwitches: each GPU's own), from NVML; 0: unknown
};

struct Nic {
  std::string name;      ///< "eth0"
  std::string driver;    ///< "mlx5_core"
  std::string pciBusId;  ///< empty for virtual devices
  int speedMbps = -1;    ///< -1: the kernel does not say (virtual NICs, link down)
  int mtu = 0;
  bool up = false;
  bool loopback = false;
  int numaNode = -1;
  std::vector<std::string> rdmaDevices;  ///< "mlx5_0": the RDMA devices on this port
};

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;
  std::uint64_t memoryBytes = 0;
};

struct Topology {
  std::string hostname;
  std::string cpuModel;
  int logicalCpus = 0;            ///< online CPUs
  int usableCpus = 0;             ///< in this process's affinity mask
  std::vector<int> usableCpuIds;  ///< their ids, read live (empty for a described machine or an unreadable mask)
  int sockets = 0;
  int cores = 0;                   ///< physical cores (0: unknown; sysfs alone does not count them)
  std::uint64_t l2CacheBytes = 0;  ///< one L2 cache's size (0: unknown)
  std::uint64_t l3CacheBytes = 0;  ///< one L3 cache's size (0: unknown)
  std::string readBy;              ///< what read the CPUs and NUMA nodes: "hwloc (API 2.8)", or "sysfs"
  std::vector<NumaNode> numa;
  std::uint64_t memoryBytes = 0;
  double cgroupCpus = 0;                ///< the cgroup's CPU quota in CPUs; 0: none
  std::uint64_t cgroupMemoryBytes = 0;  ///< the cgroup's memory limit; 0: none
  std::uint64_t shmBytes = 0;           ///< size of /dev/shm
  std::string container;                ///< "docker", "podman", "kubernetes", "lxc", "gvisor"; empty: none seen
  int cudaDriverVersion = 0;            ///< 13000 for CUDA 13.0; 0: no driver
  int cudaRuntimeVersion = 0;           ///< the runtime braid was built with; 0: built without CUDA
  bool nvidiaPeermem = false;           ///< the nvidia_peermem module is loaded (GPUDirect RDMA)
  bool iommu = false;                   ///< an IOMMU is on (PCIe P2P may then need ACS off or passthrough)
  bool mpsServer = false;               ///< an MPS control daemon serves this machine (mpsServerRunning)
  std::vector<Gpu> gpus;
  std::vector<GpuPair> gpuPairs;
  std::vector<Nic> nics;

  /// The pair (a, b) in either order, or null.
  const GpuPair* pair(int a, int b) const;
  /// Whether every pair of GPUs is joined by NVLink (false with fewer than two GPUs).
  bool allNvlink() const;
  /// Whether every pair of GPUs can reach each other's memory (true with fewer than two GPUs).
  bool allP2p() const;
  /// The CPUs this process can keep busy at once: its affinity mask's (the online ones where unknown), at most its
  /// cgroup's CPU quota rounded up. What the helper threads and the spinning policy are sized by.
  int runnableCpus() const;
  /// The fastest NIC that is up and not loopback, or null.
  const Nic* fastestNic() const;
};

/// Whether an MPS control daemon serves this machine: its pipe directory (CUDA's CUDA_MPS_PIPE_DIRECTORY, by default
/// /tmp/nvidia-mps, under `root`) holds the "control" FIFO, which CUDA processes find when they start. Their kernels
/// then share the GPU side by side instead of taking turns in time slices.
bool mpsServerRunning(const std::string& root = "");

/// This host, as this process sees it, its devices placed on NUMA nodes by hwloc's PCI tree. `root` prefixes every
/// procfs and sysfs path (tests point it at a fake tree; then nothing is asked of this process or of the CUDA
/// runtime).
Topology detect(const std::string& root = "");

}  // namespace braid::topology
