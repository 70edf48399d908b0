// Picks an algorithm for a call from its size and the group, and says why (logs, `braid explain` later).
// The numbers it uses are data: knobs declared in base/config.cpp, later measured tables from `braid tune`.
#pragma once

#include <cstddef>
#include <string>

#include "base/config.hpp"

namespace braid::tuning {

struct Choice {
  std::string algorithm;  // "direct" or "rsag"
  std::string reason;
};

/// For allreduce and reduce among the ranks of one host.
Choice chooseLocalReduce(std::size_t bytes, int ranks, const Settings& settings);

}  // namespace braid::tuning
