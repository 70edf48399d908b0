// The machine a benchmark ran on, as results files record it (bench/results/README.md): CPU model, usable cores,
// the GPUs the CUDA driver sees, and in words what joined the ranks.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace braid::tools {

struct MachineInfo {
  std::string cpu;                // "Intel(R) Xeon(R) Processor", from /proc/cpuinfo
  int cores = 0;                  // in this process's affinity mask: what the run could use
  std::vector<std::string> gpus;  // one model name per GPU, in CUDA's order; empty without a driver or GPU
};

/// This machine. GPUs come from the CUDA driver API loaded at run time (nothing here needs CUDA to be installed);
/// it initialises the driver in this process, so a process that must fork CUDA ranks asks it in one of them.
MachineInfo machineInfo();

/// The CPUs this process may use (its affinity mask; the online CPUs where that cannot be read).
int usableCores();

/// {"cpu", "cores", "gpus": [...], "link": link}: the schema's `machine`.
nlohmann::json machineJson(const MachineInfo& machine, const std::string& link);

/// One line for tables and plot titles: "Intel(R) Xeon(R) Processor, 16 cores, 2x NVIDIA H200".
std::string machineDescription(const MachineInfo& machine);
std::string machineDescription();

/// The local interfaces that hold or reach `addresses` (dotted IPv4 or IPv6 text, as sockets report them, a port
/// after the last ':' allowed): the interface with that address, else the one whose subnet holds it; "loopback"
/// for 127.0.0.0/8 and ::1. In the order first seen, each once; an address no interface accounts for is kept as
/// it is.
std::vector<std::string> interfacesOf(const std::vector<std::string>& addresses);

}  // namespace braid::tools
