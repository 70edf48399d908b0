// One step of a collective setup between the ranks of a device channel: every rank tells the others whether its
// part worked, so that all of them go on or all stop with the same reason.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "algorithms/engine.hpp"
#include "base/error.hpp"

namespace braid::device {

/// Marks `step` (a struct with `std::uint32_t ok` and `std::array<char, N> why`) failed with `text`.
template <typename Step>
void failStep(Step& step, const std::string& text) {
  step.ok = 0;
  std::snprintf(step.why.data(), step.why.size(), "%s", text.c_str());
}

/// Every rank's `mine` (a trivially copyable Step); the first failure by rank in `why` ("rank 1: ..."), empty when
/// every rank's step worked.
template <typename Step>
std::vector<Step> exchangeSteps(Engine& host, const Step& mine, int size, const OpEnv& env, std::string* why) {
  std::vector<Step> all(static_cast<std::size_t>(size));
  host.allgather(&mine, all.data(), sizeof(Step), DataType::kUint8, env);
  why->clear();
  for (int r = 0; r < size && why->empty(); ++r) {
    const Step& s = all[static_cast<std::size_t>(r)];
    if (!s.ok) *why = strCat("rank ", r, ": ", s.why.data());
  }
  return all;
}

}  // namespace braid::device
