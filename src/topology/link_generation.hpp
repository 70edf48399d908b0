// Which generation of link a GPU has: NVLink's by its architecture, PCIe's as its link runs now (sysfs). Hardware
// facts: tuning/cost_model.cpp prices each generation (tuning::gpuLinkCost).
#pragma once

#include <string>

namespace braid::topology {

/// The NVLink generation of GPUs of compute capability major.minor: 2 Volta, 3 Ampere (A100, GA10x), 4 Hopper, 5
/// Blackwell's data-centre parts; 0 for architectures without NVLink (Turing, Ada, Blackwell's desktop parts) and
/// unknown ones.
int nvlinkGeneration(int ccMajor, int ccMinor);

/// The PCIe generation of a link that runs at `speed` (sysfs's current_link_speed: "16.0 GT/s PCIe" is 4):
/// 2.5, 5, 8, 16, 32 and 64 GT/s are generations 1 to 6; 0 for anything else.
int pcieGenerationOfSpeed(const std::string& speed);

/// The PCIe generation the device at `pciBusId` ("0000:3b:00.0", lower case as sysfs names it) runs at now, from
/// `root`/sys/bus/pci/devices; 0 where sysfs does not say (virtual devices, no sysfs).
int pcieGeneration(const std::string& pciBusId, const std::string& root = "");

}  // namespace braid::topology
