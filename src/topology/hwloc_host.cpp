#include "topology/hwloc_host.hpp"

#include <hwloc.h>

// hwloc_topology_set_components and the I/O filters.
#if HWLOC_API_VERSION < 0x00020100
#error "braid needs hwloc 2.1 or later"
#endif

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace braid::topology {

namespace {

using TopologyHandle = std::unique_ptr<hwloc_topology, decltype(&hwloc_topology_destroy)>;

std::vector<int> idsOf(hwloc_const_bitmap_t set) {
  std::vector<int> ids;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) ids.push_back(i);
  return ids;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The first cache of `type` (its size, in bytes): caches of one level are alike on the machines braid runs on.
std::uint64_t cacheBytes(hwloc_topology_t topo, hwloc_obj_type_t type) {
  hwloc_obj_t cache = hwloc_get_next_obj_by_type(topo, type, nullptr);
  return cache != nullptr && cache->attr != nullptr ? cache->attr->cache.size : 0;
}

// Loads the topology, or says why not. I/O devices are kept where asked (PCI bridges and devices, the OS devices of
// NICs) so that devices can be placed on their NUMA node; the vendors' discovery components are left out: CUDA's would
// start the CUDA runtime in a process that may still fork its ranks, and the GPUs are read from CUDA itself
// (detect_gpus.cpp). So is the libpciaccess one ("pci"): Linux's own component reads the PCI tree from sysfs, and
// libpciaccess leaves allocations behind when its plugin is unloaded (LeakSanitizer reports them in every process).
TopologyHandle load(const HwlocSource& from, std::string& why) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    why = "hwloc_topology_init failed";
    return {nullptr, hwloc_topology_destroy};
  }
  TopologyHandle topo(raw, hwloc_topology_destroy);
  for (const char* component : {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl", "pci"}) {
    hwloc_topology_set_components(raw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, component);
  }
  if (from.devices) hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // Every CPU and node of the machine, as sysfs's "online" list counts them; the process's own mask is read apart.
  hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  if (!from.xml.empty() &&
      hwloc_topology_set_xmlbuffer(raw, from.xml.data(), static_cast<int>(from.xml.size()) + 1) != 0) {
    why = "hwloc could not read the XML it was given";
    return {nullptr, hwloc_topology_destroy};
  }
  if (!from.synthetic.empty() && hwloc_topology_set_synthetic(raw, from.synthetic.c_str()) != 0) {
    why = "hwloc could not read the synthetic description \"" + from.synthetic + "\"";
    return {nullptr, hwloc_topology_destroy};
  }
  if (hwloc_topology_load(raw) != 0) {
    why = "hwloc_topology_load failed";
    return {nullptr, hwloc_topology_destroy};
  }
  return topo;
}

}  // namespace

HwlocView readHwloc(Topology& t, const HwlocSource& from, std::string& why) {
  HwlocView view;
  const TopologyHandle topo = load(from, why);
  if (!topo) return view;
  hwloc_topology_t h = topo.get();
  const int pus = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU);
  if (pus <= 0) {
    why = "hwloc found no CPUs";
    return view;
  }
  t.logicalCpus = pus;
  t.cores = std::max(hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE), 0);
  t.sockets = std::max(hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PACKAGE), 1);
  if (hwloc_obj_t package = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_PACKAGE, nullptr)) {
    if (const char* model = hwloc_obj_get_info_by_name(package, "CPUModel")) t.cpuModel = model;
  }
  t.l2CacheBytes = cacheBytes(h, HWLOC_OBJ_L2CACHE);
  t.l3CacheBytes = cacheBytes(h, HWLOC_OBJ_L3CACHE);
  t.numa.clear();
  const int nodes = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nodes; ++i) {
    hwloc_obj_t node = hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    NumaNode n;
    n.id = static_cast<int>(node->os_index);
    if (node->cpuset != nullptr) n.cpus = idsOf(node->cpuset);
    n.memoryBytes = node->attr != nullptr ? node->attr->numanode.local_memory : 0;
    t.numa.push_back(std::move(n));
  }
  std::sort(t.numa.begin(), t.numa.end(), [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  if (nodes > 1) {
    for (hwloc_obj_t dev = hwloc_get_next_pcidev(h, nullptr); dev != nullptr; dev = hwloc_get_next_pcidev(h, dev)) {
      hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(h, dev);
      if (parent == nullptr || parent->nodeset == nullptr || hwloc_bitmap_weight(parent->nodeset) != 1) continue;
      char busId[32];
      const auto& pci = dev->attr->pcidev;
      std::snprintf(busId, sizeof busId, "%04x:%02x:%02x.%01x", static_cast<unsigned>(pci.domain),
                    static_cast<unsigned>(pci.bus), static_cast<unsigned>(pci.dev), static_cast<unsigned>(pci.func));
      view.pciNuma[busId] = hwloc_bitmap_first(parent->nodeset);
    }
  }
  why.clear();
  return view;
}

std::string hwlocVersion() {
  const unsigned v = hwloc_get_api_version();
  return "hwloc (API " + std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + ")";
}

int numaOfPci(const HwlocView& view, const std::string& busId, int fallback) {
  const auto it = view.pciNuma.find(lower(busId));
  return it == view.pciNuma.end() ? fallback : it->second;
}

}  // namespace braid::topology
