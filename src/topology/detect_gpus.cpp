// The GPU half of detect(): every GPU the CUDA runtime sees and what the driver says about each pair. Without a
// driver (or in a build without CUDA) there are simply no GPUs.
#include <cstdio>
#include <fstream>

#include "topology/nvml.hpp"
#include "topology/topology.hpp"

#if BRAID_WITH_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

namespace braid::topology {

#if BRAID_WITH_CUDA

namespace {

std::string uuidText(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

// Whether the GPU can export its memory as dma-buf (how RDMA NICs reach GPU memory without nvidia_peermem): a
// driver attribute the runtime does not name (its slot 124 is "reserved"), asked through the driver's entry point.
int dmaBufSupport(int ordinal) {
  void* getDevice = nullptr;
  void* getAttribute = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuDeviceGet", &getDevice, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      cudaGetDriverEntryPointByVersion("cuDeviceGetAttribute", &getAttribute, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      getDevice == nullptr || getAttribute == nullptr) {
    (void)cudaGetLastError();
    return -1;
  }
  CUdevice device = 0;
  int supported = 0;
  if (reinterpret_cast<decltype(&::cuDeviceGet)>(getDevice)(&device, ordinal) != CUDA_SUCCESS ||
      reinterpret_cast<decltype(&::cuDeviceGetAttribute)>(getAttribute)(
          &supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, device) != CUDA_SUCCESS) {
    return -1;
  }
  return supported != 0 ? 1 : 0;
}

// sysfs names PCI devices in lower case ("0000:00:06.0"); the driver answers in upper case.
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

void detectGpus(Topology& t, const std::string& root) {
  (void)cudaDriverGetVersion(&t.cudaDriverVersion);
  (void)cudaRuntimeGetVersion(&t.cudaRuntimeVersion);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver, no device: a host without GPUs
    return;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    Gpu g;
    g.index = d;
    g.name = prop.name;
    g.uuid = uuidText(prop.uuid);
    g.ccMajor = prop.major;
    g.ccMinor = prop.minor;
    g.sms = prop.multiProcessorCount;
    g.memoryBytes = prop.totalGlobalMem;
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, d) == cudaSuccess) g.pciBusId = lower(bus);
    g.dmaBuf = dmaBufSupport(d);
    std::ifstream numa(root + "/sys/bus/pci/devices/" + g.pciBusId + "/numa_node");
    if (!(numa >> g.numaNode)) g.numaNode = -1;
    t.gpus.push_back(std::move(g));
  }
  for (int a = 0; a < count; ++a) {
    for (int b = a + 1; b < count; ++b) {
      GpuPair p;
      p.a = a;
      p.b = b;
      int ab = 0, ba = 0;
      p.p2p = cudaDeviceCanAccessPeer(&ab, a, b) == cudaSuccess && cudaDeviceCanAccessPeer(&ba, b, a) == cudaSuccess &&
              ab != 0 && ba != 0;
      int rank = -1;
      if (p.p2p && cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, a, b) == cudaSuccess) {
        p.perfRank = rank;
      }
      // Until NVML says otherwise (below), the driver's best performance rank stands for NVLink (as the device
      // channel assumes).
      p.nvlink = p.p2p && p.perfRank == 0;
      (void)cudaGetLastError();
      t.gpuPairs.push_back(p);
    }
  }
  addNvmlFacts(t);
}

#else

void detectGpus(Topology& /*t*/, const std::string& /*root*/) {}

#endif

}  // namespace braid::topology
