#include "topology/topology_json.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.hpp"

namespace braid::topology {

// Field names are the members' names; a missing field keeps its default, so fixtures list only what they know.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Gpu, index, name, uuid, pciBusId, ccMajor, ccMinor, sms, memoryBytes,
                                                numaNode, migEnabled, smClockMhz, smClockMaxMhz, memClockMaxMhz,
                                                slowdown, ecc, eccUncorrected, pcieWidth, pcieMaxWidth, dmaBuf)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuPair, a, b, p2p, perfRank, nvlink, nvlinks)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Nic, name, driver, pciBusId, speedMbps, mtu, up, loopback, numaNode,
                                                rdmaDevices)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NumaNode, id, cpus, memoryBytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Topology, hostname, cpuModel, logicalCpus, usableCpus, sockets, numa,
                                                memoryBytes, cgroupCpus, cgroupMemoryBytes, shmBytes, container,
                                                cudaDriverVersion, cudaRuntimeVersion, nvidiaPeermem, iommu, gpus,
                                                gpuPairs, nics)

}  // namespace braid::topology

namespace braid::tools {

std::string topologyToJson(const topology::Topology& t) { return nlohmann::json(t).dump(2) + "\n"; }

topology::Topology topologyFromJson(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text).get<topology::Topology>();
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::kInvalidArgument, {}, "topology ", source, ": ", e.what());
  }
}

topology::Topology loadTopology(const std::string& path) {
  if (path.empty()) return topology::detect();
  std::ifstream in(path);
  if (!in) fail(ErrorCode::kInvalidArgument, {}, "topology file ", path, ": cannot be read");
  std::stringstream s;
  s << in.rdbuf();
  return topologyFromJson(s.str(), path);
}

}  // namespace braid::tools
