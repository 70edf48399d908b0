// The host's CPUs, cores, caches and NUMA nodes, and the NUMA node of each PCI device, as hwloc sees them: the
// library Open MPI and Slurm read the machine with. detectHost() takes them from here on a live host and reads sysfs
// itself only where hwloc cannot load the host (and for fixtures of sysfs trees).
#pragma once

#include <map>
#include <string>

#include "topology/topology.hpp"

namespace braid::topology {

/// Where hwloc reads the machine from: this host (both empty), hwloc's XML export of one (lstopo --of xml), or
/// hwloc's synthetic description ("package:2 [numa] core:4 pu:2"); the last two let tests describe machines we do
/// not have. `devices`: also the PCI tree, to place devices on their nodes; on a live host it costs several times
/// the rest (~12 of ~14 ms on a 2-CPU VM), which a communicator's creation does not pay.
struct HwlocSource {
  std::string xml{};
  std::string synthetic{};
  bool devices = true;
};

/// What hwloc adds beyond the CPU fields of Topology: the NUMA node of each PCI device, by bus id in lower case
/// ("0000:17:00.0"); only on machines of more than one node (on one node every device is on it, and sysfs says -1).
struct HwlocView {
  std::map<std::string, int> pciNuma;
};

/// Fills `t`'s logicalCpus, sockets, cores, cpuModel, l2CacheBytes, l3CacheBytes and numa from hwloc, and returns
/// what else it learned. Throws nothing: on failure `why` says what failed and `t` is left as it was.
HwlocView readHwloc(Topology& t, const HwlocSource& from, std::string& why);

/// "hwloc (API 2.8)": the API version of the hwloc library loaded.
std::string hwlocVersion();

/// The NUMA node `view` gives the PCI device `busId` (any case), or `fallback`.
int numaOfPci(const HwlocView& view, const std::string& busId, int fallback);

}  // namespace braid::topology
