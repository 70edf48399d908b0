#include "core/placement.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

#include "base/error.hpp"

namespace braid::core {

Placement Placement::of(const std::vector<RankHost>& ranks, int rank) {
  Placement p;
  std::map<std::string, int> hostIndex;
  p.hostOf.reserve(ranks.size());
  for (const RankHost& r : ranks) {
    auto [it, added] = hostIndex.emplace(r.identity, static_cast<int>(p.hostNames.size()));
    if (added) p.hostNames.push_back(r.name);
    p.hostOf.push_back(it->second);
  }
  std::map<std::string, int> perMachine;
  for (const RankHost& r : ranks) {
    if (++perMachine[machineOf(r.identity)] > 1) p.machineRunsSeveralRanks = true;
  }
  p.localSize = 0;
  std::set<int> cpus, nodes;
  bool cpusKnown = true, nodesKnown = true, allQuotas = true;
  std::map<std::uint64_t, int> quotas;  // per cgroup, the CPUs its quota keeps busy
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (p.hostOf[r] != p.hostOf[static_cast<std::size_t>(rank)]) continue;
    if (static_cast<int>(r) < rank) ++p.localRank;
    ++p.localSize;
    cpusKnown = cpusKnown && !ranks[r].cpus.empty();
    cpus.insert(ranks[r].cpus.begin(), ranks[r].cpus.end());
    nodesKnown = nodesKnown && ranks[r].numaNode >= 0;
    allQuotas = allQuotas && ranks[r].cpuQuota > 0;
    int& quota = quotas[ranks[r].cpuQuotaGroup];
    quota = std::max(quota, ranks[r].cpuQuota);
    nodes.insert(ranks[r].numaNode);
  }
  p.localCpus = cpusKnown ? static_cast<int>(cpus.size()) : 0;
  if (allQuotas) {
    long total = 0;
    for (const auto& [group, cpus] : quotas) total += cpus;
    if (p.localCpus > total) p.localCpus = static_cast<int>(total);
  }
  p.localNumaNodes = nodesKnown ? static_cast<int>(nodes.size()) : 0;
  const bool ratesKnown = std::all_of(ranks.begin(), ranks.end(), [](const RankHost& r) { return r.nicMbps > 0; });
  if (ratesKnown && !ranks.empty()) {
    p.slowestNicMbps = std::min_element(ranks.begin(), ranks.end(), [](const RankHost& a, const RankHost& b) {
                         return a.nicMbps < b.nicMbps;
                       })->nicMbps;
  }
  return p;
}

// The identity never holds a newline (a boot id and a namespace inode), a host name neither.
std::string Placement::encode(const RankHost& host) {
  return strCat(host.identity, "\n", host.name, "\n", formatCpuList(host.cpus), "\n", host.numaNode, "\n", host.nicMbps,
                "\n", host.cpuQuota, "\n", host.cpuQuotaGroup);
}

RankHost Placement::decode(const std::string& text) {
  std::vector<std::string> lines;
  for (std::size_t at = 0;;) {
    const std::size_t cut = text.find('\n', at);
    lines.push_back(text.substr(at, cut == std::string::npos ? std::string::npos : cut - at));
    if (cut == std::string::npos) break;
    at = cut + 1;
  }
  const auto number = [&](std::size_t i, int unknown) {
    if (lines.size() <= i) return unknown;
    char* end = nullptr;
    const long v = std::strtol(lines[i].c_str(), &end, 10);
    if (lines[i].empty() || *end != '\0' || v < -1 || v > std::numeric_limits<int>::max()) {
      fail(ErrorCode::kInvalidArgument, {}, "a rank's placement '", text, "': '", lines[i], "' is not a number");
    }
    return static_cast<int>(v);
  };
  RankHost host;
  host.identity = lines[0];
  host.name = lines.size() > 1 ? lines[1] : lines[0];
  if (lines.size() > 2) host.cpus = parseCpuList(lines[2]);
  host.numaNode = number(3, -1);
  host.nicMbps = std::max(number(4, 0), 0);
  host.cpuQuota = std::max(number(5, 0), 0);
  if (lines.size() > 6) {
    char* end = nullptr;
    host.cpuQuotaGroup = std::strtoull(lines[6].c_str(), &end, 10);
    if (lines[6].empty() || *end != '\0' || lines[6][0] == '-') {
      fail(ErrorCode::kInvalidArgument, {}, "a rank's placement '", text, "': '", lines[6], "' is not a cgroup id");
    }
  }
  return host;
}

int numaNodeOf(const topology::Topology& host, const std::vector<int>& cpus) {
  if (cpus.empty()) return -1;
  for (const topology::NumaNode& node : host.numa) {
    const std::set<int> mine(node.cpus.begin(), node.cpus.end());
    if (std::all_of(cpus.begin(), cpus.end(), [&](int c) { return mine.count(c) != 0; })) return node.id;
  }
  return -1;
}

int nicMbpsOf(const topology::Topology& host, const std::vector<std::string>& names) {
  int total = 0;
  for (const std::string& name : names) {
    const auto nic =
        std::find_if(host.nics.begin(), host.nics.end(), [&](const topology::Nic& n) { return n.name == name; });
    if (nic == host.nics.end() || nic->loopback || nic->speedMbps <= 0) return 0;
    total += nic->speedMbps;
  }
  return total;
}

std::string formatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> parseCpuList(const std::string& text) {
  std::vector<int> cpus;
  const auto number = [&](const std::string& part) {
    char* end = nullptr;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0 || v > 1 << 20) {
      fail(ErrorCode::kInvalidArgument, {}, "CPU list '", text, "': '", part, "' is not a CPU number");
    }
    return static_cast<int>(v);
  };
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    const int first = number(item.substr(0, dash));
    const int last = dash == std::string::npos ? first : number(item.substr(dash + 1));
    if (last < first) fail(ErrorCode::kInvalidArgument, {}, "CPU list '", text, "': range '", item, "' runs backwards");
    for (int c = first; c <= last; ++c) cpus.push_back(c);
    start = comma + 1;
  }
  return cpus;
}

}  // namespace braid::core
