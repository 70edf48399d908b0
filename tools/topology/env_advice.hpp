// `braid env`'s advice: environment settings that suit a machine (its Topology) and how many ranks run on it,
// each with the reason, as shell lines `eval "$(braid env)"` can take.
#pragma once

#include <string>
#include <vector>

#include "braid/topology.hpp"

namespace braid::tools {

struct EnvAdvice {
  std::string name;
  std::string value;
  std::string reason;
};

/// The settings for `ranksPerNode` local ranks (0: one per GPU, or one on a machine without GPUs).
std::vector<EnvAdvice> adviseEnv(const topology::Topology& t, int ranksPerNode);

/// Shell text: each setting as `# reason` then `export NAME='value'`; `notes` (comment lines only) first.
std::string envScript(const std::vector<EnvAdvice>& advice, const std::vector<std::string>& notes);

/// Comment lines for what cannot be an export: which NUMA node each local rank should run on.
std::vector<std::string> bindingNotes(const topology::Topology& t);

}  // namespace braid::tools
