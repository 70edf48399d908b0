#include "tune_crossover.hpp"

#include <cstdio>
#include <vector>

namespace braid::tools {

namespace {

// Differences below this share are noise between two sweeps run one after the other.
constexpr double kNoise = 0.03;

}  // namespace

Crossover keepUpTo(const std::map<std::size_t, double>& directUs, const std::map<std::size_t, double>& rsagUs,
                   const std::string& first, const std::string& second) {
  std::vector<std::size_t> sizes;
  for (const auto& [bytes, us] : directUs) {
    if (rsagUs.count(bytes) != 0) sizes.push_back(bytes);
  }
  Crossover c;
  if (sizes.empty()) {
    c.why = "no size measured by both sweeps: nothing to compare";
    return c;
  }
  auto rsagWins = [&](std::size_t bytes) { return rsagUs.at(bytes) < directUs.at(bytes) * (1 - kNoise); };
  // The first size from which rsag wins at every larger size.
  std::size_t from = sizes.size();
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (!rsagWins(sizes[i])) break;
    from = i;
  }
  if (from == sizes.size()) {
    c.maxBytes = sizes.back();
    c.why = first + " was as fast as " + second + " at every size up to " + std::to_string(sizes.back()) +
            " B: it keeps all of them";
  } else if (from == 0) {
    c.maxBytes = sizes.front() / 2;
    c.why = second + " was faster than " + first + " from the smallest size measured (" +
            std::to_string(sizes.front()) + " B)";
  } else {
    c.maxBytes = sizes[from - 1];
    c.why = second + " is faster than " + first + " from " + std::to_string(sizes[from]) + " B on (" +
            std::to_string(static_cast<int>(rsagUs.at(sizes[from]))) + " us against " +
            std::to_string(static_cast<int>(directUs.at(sizes[from]))) + " us)";
  }
  return c;
}

std::string crossoverTable(const std::map<std::size_t, double>& directUs, const std::map<std::size_t, double>& rsagUs,
                           const std::string& first, const std::string& second) {
  char head[96];
  std::snprintf(head, sizeof head, "%13s %12s %12s\n", "bytes", (first + " us").c_str(), (second + " us").c_str());
  std::string out = head;
  for (const auto& [bytes, us] : directUs) {
    const auto r = rsagUs.find(bytes);
    if (r == rsagUs.end()) continue;
    char line[96];
    std::snprintf(line, sizeof line, "%13zu %12.1f %12.1f\n", bytes, us, r->second);
    out += line;
  }
  return out;
}

}  // namespace braid::tools
