#include "topology/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>
#include <vector>

namespace braid::topology {

namespace {

// NVML's stable C ABI, declared here (no nvml.h needed to build): the few types and entry points used.
using NvmlReturn = int;
constexpr NvmlReturn kNvmlSuccess = 0;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlPciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};
constexpr unsigned kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS (Hopper: 18)

struct Nvml {
  void* lib = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*byPciBusId)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*linkState)(NvmlDevice, unsigned, int*) = nullptr;
  NvmlReturn (*remotePci)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
  NvmlReturn (*migMode)(NvmlDevice, unsigned*, unsigned*) = nullptr;
  // Optional: each fact is left unknown where the driver lacks its entry point.
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*) = nullptr;     // nvmlDeviceGetClockInfo
  NvmlReturn (*maxClock)(NvmlDevice, int, unsigned*) = nullptr;  // nvmlDeviceGetMaxClockInfo
  NvmlReturn (*reasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*eccMode)(NvmlDevice, int*, int*) = nullptr;
  NvmlReturn (*eccErrors)(NvmlDevice, int, int, unsigned long long*) = nullptr;
  NvmlReturn (*pcieWidth)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*pcieMaxWidth)(NvmlDevice, unsigned*) = nullptr;
};

constexpr int kClockSm = 1;           // NVML_CLOCK_SM
constexpr int kClockMem = 2;          // NVML_CLOCK_MEM
constexpr int kErrorUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kCounterVolatile = 0;   // NVML_VOLATILE_ECC: since the driver loaded

template <typename Fn>
bool symbol(void* lib, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  return fn != nullptr;
}

using PciKey = std::tuple<unsigned, unsigned, unsigned>;  // domain, bus, device

PciKey keyOf(const std::string& busId) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  std::sscanf(busId.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function);
  return {domain, bus, device};
}

void addDeviceFacts(const Nvml& n, NvmlDevice dev, Gpu& g) {
  unsigned mhz = 0;
  if (n.clock != nullptr && n.clock(dev, kClockSm, &mhz) == kNvmlSuccess) g.smClockMhz = static_cast<int>(mhz);
  if (n.maxClock != nullptr && n.maxClock(dev, kClockSm, &mhz) == kNvmlSuccess) g.smClockMaxMhz = static_cast<int>(mhz);
  if (n.maxClock != nullptr && n.maxClock(dev, kClockMem, &mhz) == kNvmlSuccess) {
    g.memClockMaxMhz = static_cast<int>(mhz);
  }
  unsigned long long bits = 0;
  if (n.reasons != nullptr && n.reasons(dev, &bits) == kNvmlSuccess) g.slowdown = bits;
  int current = 0, pending = 0;
  if (n.eccMode != nullptr && n.eccMode(dev, &current, &pending) == kNvmlSuccess) g.ecc = current != 0 ? 1 : 0;
  unsigned long long errors = 0;
  if (g.ecc == 1 && n.eccErrors != nullptr &&
      n.eccErrors(dev, kErrorUncorrected, kCounterVolatile, &errors) == kNvmlSuccess) {
    g.eccUncorrected = static_cast<std::int64_t>(errors);
  }
  unsigned lanes = 0;
  if (n.pcieWidth != nullptr && n.pcieWidth(dev, &lanes) == kNvmlSuccess) g.pcieWidth = static_cast<int>(lanes);
  if (n.pcieMaxWidth != nullptr && n.pcieMaxWidth(dev, &lanes) == kNvmlSuccess)
    g.pcieMaxWidth = static_cast<int>(lanes);
}

}  // namespace

bool addNvmlFacts(Topology& t) {
  Nvml n;
  n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (n.lib == nullptr) return false;
  const bool found = symbol(n.lib, n.init, "nvmlInit_v2") && symbol(n.lib, n.shutdown, "nvmlShutdown") &&
                     symbol(n.lib, n.byPciBusId, "nvmlDeviceGetHandleByPciBusId_v2") &&
                     symbol(n.lib, n.linkState, "nvmlDeviceGetNvLinkState") &&
                     symbol(n.lib, n.remotePci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  (void)symbol(n.lib, n.migMode, "nvmlDeviceGetMigMode");  // older drivers have none: no MIG
  (void)symbol(n.lib, n.clock, "nvmlDeviceGetClockInfo");
  (void)symbol(n.lib, n.maxClock, "nvmlDeviceGetMaxClockInfo");
  // Renamed in CUDA 12 (throttle -> event reasons); the bits are the same.
  if (!symbol(n.lib, n.reasons, "nvmlDeviceGetCurrentClocksEventReasons")) {
    (void)symbol(n.lib, n.reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  (void)symbol(n.lib, n.eccMode, "nvmlDeviceGetEccMode");
  (void)symbol(n.lib, n.eccErrors, "nvmlDeviceGetTotalEccErrors");
  (void)symbol(n.lib, n.pcieWidth, "nvmlDeviceGetCurrPcieLinkWidth");
  (void)symbol(n.lib, n.pcieMaxWidth, "nvmlDeviceGetMaxPcieLinkWidth");
  if (!found || n.init() != kNvmlSuccess) {
    dlclose(n.lib);
    return false;
  }
  std::map<PciKey, int> gpuAt;  // PCI address -> index in t.gpus
  for (std::size_t i = 0; i < t.gpus.size(); ++i) gpuAt[keyOf(t.gpus[i].pciBusId)] = static_cast<int>(i);
  // Links per GPU: to another GPU directly, or to something else (an NVSwitch).
  std::map<std::pair<int, int>, int> direct;
  std::vector<int> switched(t.gpus.size(), 0);
  for (std::size_t i = 0; i < t.gpus.size(); ++i) {
    NvmlDevice dev = nullptr;
    if (n.byPciBusId(t.gpus[i].pciBusId.c_str(), &dev) != kNvmlSuccess) continue;
    unsigned current = 0, pending = 0;
    if (n.migMode != nullptr && n.migMode(dev, &current, &pending) == kNvmlSuccess) t.gpus[i].migEnabled = current == 1;
    addDeviceFacts(n, dev, t.gpus[i]);
    for (unsigned link = 0; link < kMaxLinks; ++link) {
      int active = 0;
      if (n.linkState(dev, link, &active) != kNvmlSuccess || active == 0) continue;
      NvmlPciInfo remote{};
      if (n.remotePci(dev, link, &remote) != kNvmlSuccess) continue;
      const auto peer = gpuAt.find({remote.domain, remote.bus, remote.device});
      if (peer != gpuAt.end() && peer->second != static_cast<int>(i)) {
        ++direct[{static_cast<int>(i), peer->second}];
      } else {
        ++switched[i];
      }
    }
  }
  for (GpuPair& p : t.gpuPairs) {
    const auto a = static_cast<std::size_t>(p.a), b = static_cast<std::size_t>(p.b);
    if (a >= t.gpus.size() || b >= t.gpus.size()) continue;
    const int links = direct.count({p.a, p.b}) != 0 ? direct[{p.a, p.b}] : 0;
    // Through NVSwitches every GPU with switch links reaches every other one with them, at its own link count.
    const int viaSwitch = switched[a] > 0 && switched[b] > 0 ? std::min(switched[a], switched[b]) : 0;
    p.nvlinks = links + viaSwitch;
    p.nvlink = p.nvlinks > 0;
  }
  n.shutdown();
  dlclose(n.lib);
  return true;
}

}  // namespace braid::topology
