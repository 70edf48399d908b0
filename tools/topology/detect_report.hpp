// The readable form of a Topology (`braid detect`): the host, the GPUs and their links as a matrix (like
// `nvidia-smi topo -m`), NICs with their locality, and what braid will use between which ranks.
#pragma once

#include <string>

#include "braid/topology.hpp"

namespace braid::tools {

std::string detectReport(const topology::Topology& t);

/// What braid's transports will be on this machine, one line per kind of peer (used by detect and explain).
std::string transportPlan(const topology::Topology& t);

}  // namespace braid::tools
