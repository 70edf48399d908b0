// `braid doctor`'s checks: what is wrong with a machine's setup for collectives, each with a verdict and what to
// do about it. checkTopology() judges a Topology (so fixtures test it); checkProcess() looks at this process and
// its limits, and measureLinks() times real copies between GPUs and between host and GPU (live machine only).
#pragma once

#include <string>
#include <vector>

#include "braid/topology.hpp"

namespace braid::tools {

enum class Verdict { kOk, kInfo, kWarn, kFail };
const char* verdictName(Verdict v);

struct Check {
  std::string name;  ///< "cuda-driver", "p2p", "shm", ...
  Verdict verdict;
  std::string detail;  ///< what was found and, when not ok, what to do
};

std::vector<Check> checkTopology(const topology::Topology& t);
/// This process: memlock limit, NUMA binding (multi-node machines).
std::vector<Check> checkProcess(const topology::Topology& t);
/// A short bandwidth test of every GPU pair (peer copies) and of host<->GPU copies, against what the link should
/// give; nothing without GPUs or in a build without CUDA.
std::vector<Check> measureLinks(const topology::Topology& t);

/// The report: one line per check, then the counts; `failed` tells whether any check failed.
std::string doctorReport(const std::string& title, const std::vector<Check>& checks, bool* failed);

}  // namespace braid::tools
