#include "core/placement.hpp"

#include <map>

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
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (p.hostOf[r] != p.hostOf[static_cast<std::size_t>(rank)]) continue;
    if (static_cast<int>(r) < rank) ++p.localRank;
    ++p.localSize;
  }
  return p;
}

// The identity never holds a newline (a boot id and a namespace inode), a host name neither.
std::string Placement::encode(const RankHost& host) { return host.identity + "\n" + host.name; }

RankHost Placement::decode(const std::string& text) {
  const auto cut = text.find('\n');
  if (cut == std::string::npos) return {text, text};
  return {text.substr(0, cut), text.substr(cut + 1)};
}

}  // namespace braid::core
