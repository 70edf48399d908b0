#include "core/placement.hpp"

#include <algorithm>
#include <cstdlib>
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
  std::set<int> cpus;
  bool cpusKnown = true;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (p.hostOf[r] != p.hostOf[static_cast<std::size_t>(rank)]) continue;
    if (static_cast<int>(r) < rank) ++p.localRank;
    ++p.localSize;
    cpusKnown = cpusKnown && !ranks[r].cpus.empty();
    cpus.insert(ranks[r].cpus.begin(), ranks[r].cpus.end());
  }
  p.localCpus = cpusKnown ? static_cast<int>(cpus.size()) : 0;
  return p;
}

// The identity never holds a newline (a boot id and a namespace inode), a host name neither.
std::string Placement::encode(const RankHost& host) {
  return host.identity + "\n" + host.name + "\n" + formatCpuList(host.cpus);
}

RankHost Placement::decode(const std::string& text) {
  const auto cut = text.find('\n');
  if (cut == std::string::npos) return {text, text, {}};
  const auto second = text.find('\n', cut + 1);
  if (second == std::string::npos) return {text.substr(0, cut), text.substr(cut + 1), {}};
  return {text.substr(0, cut), text.substr(cut + 1, second - cut - 1), parseCpuList(text.substr(second + 1))};
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
