// What NVML knows and the CUDA runtime does not: which NVLinks are up and where each one goes, and MIG mode.
// libnvidia-ml is loaded at run time (it comes with the driver), so braid builds and runs where there is none.
#pragma once

#include "topology/topology.hpp"

namespace braid::topology {

/// Fills in, for the GPUs already in `t` (matched by PCI address): NVLink per pair (true link counts, also
/// through NVSwitches), MIG mode, clocks and what holds them down, ECC mode and uncorrected errors, PCIe width. Returns
/// false, changing nothing, when NVML cannot be loaded or initialised.
bool addNvmlFacts(Topology& t);

}  // namespace braid::topology
