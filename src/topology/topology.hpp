// What detect() (braid/topology.hpp) is made of: the host's CPUs, memory and NICs, and its GPUs. Creation reads
// the host alone, without starting CUDA in a process that may still fork ranks.
#pragma once

#include <string>

#include "braid/topology.hpp"

namespace braid::topology {

/// The parts detect() reads from hwloc, procfs and sysfs. On a live host (`root` empty) hwloc reads the CPUs, cores,
/// caches and NUMA nodes; where it cannot, braid warns once and reads sysfs itself, as it does for a fake tree. NICs
/// keep sysfs's NUMA node: placing devices by hwloc's PCI tree is detect()'s, and costs more than the rest.
Topology detectHost(const std::string& root);
/// Adds the GPUs the CUDA runtime sees, and their pairs, to `t` (nothing in a build without CUDA).
void detectGpus(Topology& t, const std::string& root);

}  // namespace braid::topology
