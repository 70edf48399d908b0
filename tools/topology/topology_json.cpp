#include "topology/topology_json.hpp"

#include <climits>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "errors.hpp"

namespace braid::topology {

// Field names are the members' names; a missing field keeps its default, so fixtures list only what they know.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Gpu, index, name, uuid, pciBusId, ccMajor, ccMinor, sms, memoryBytes,
                                                numaNode, migEnabled, smClockMhz, smClockMaxMhz, memClockMaxMhz,
                                                slowdown, ecc, eccUncorrected, pcieWidth, pcieMaxWidth, dmaBuf)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuPair, a, b, p2p, perfRank, nvlink, nvlinks)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Nic, name, driver, pciBusId, speedMbps, mtu, up, loopback, numaNode,
                                                rdmaDevices)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NumaNode, id, cpus, memoryBytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Topology, hostname, cpuModel, logicalCpus, usableCpus, sockets, cores,
                                                l2CacheBytes, l3CacheBytes, readBy, numa, memoryBytes, cgroupCpus,
                                                cgroupMemoryBytes, shmBytes, container, cudaDriverVersion,
                                                cudaRuntimeVersion, nvidiaPeermem, iommu, mpsServer, gpus, gpuPairs,
                                                nics)

}  // namespace braid::topology

namespace braid::tools {

namespace {

// nlohmann converts numbers with a bare static_cast: a double too large for an int is undefined behaviour, and an
// integer too large for its field wraps silently (the fuzzer found the first). So every number is checked against
// the field it is for before the conversion: whole numbers that fit an int, except the 64-bit counters (sizes in
// bytes and NVML's bit masks, never negative; the ECC count, -1 for unknown) and the cgroup's CPU quota (a fraction).
void checkNumbers(const nlohmann::json& j, const std::string& key, const std::string& source) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) checkNumbers(v, k, source);
    return;
  }
  if (j.is_array()) {
    for (const auto& v : j) checkNumbers(v, key, source);
    return;
  }
  if (!j.is_number()) return;
  auto bad = [&](const char* why) {
    fail(ErrorCode::kInvalidArgument, {}, "topology ", source, ": \"", key, "\" ", why);
  };
  if (key == "cgroupCpus") {
    const double cpus = j.get<double>();
    if (!(cpus >= 0 && cpus <= 1e6)) bad("must be a CPU count between 0 and 1e6");
    return;
  }
  if (j.is_number_float()) bad("must be a whole number");
  const bool unsigned64 = key == "memoryBytes" || key == "cgroupMemoryBytes" || key == "shmBytes" ||
                          key == "slowdown" || key == "l2CacheBytes" || key == "l3CacheBytes";
  if (unsigned64) {
    if (j.is_number_integer() && !j.is_number_unsigned() && j.get<std::int64_t>() < 0) bad("must not be negative");
    return;
  }
  if (key == "eccUncorrected") {
    if (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) bad("is too large");
    return;
  }
  if (j.is_number_unsigned() ? j.get<std::uint64_t>() > static_cast<std::uint64_t>(INT_MAX)
                             : (j.get<std::int64_t>() < INT_MIN || j.get<std::int64_t>() > INT_MAX)) {
    bad("is out of range");
  }
}

}  // namespace

std::string topologyToJson(const topology::Topology& t) { return nlohmann::json(t).dump(2) + "\n"; }

topology::Topology topologyFromJson(const std::string& text, const std::string& source) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    checkNumbers(j, "", source);
    return j.get<topology::Topology>();
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
