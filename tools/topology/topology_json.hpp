// Topology <-> JSON, for `braid detect --json` and every command's --topology FILE (fixtures of other machines).
#pragma once

#include <string>

#include "braid/topology.hpp"

namespace braid::tools {

std::string topologyToJson(const topology::Topology& t);
/// Throws braid::Error (kInvalidArgument) naming the file and what is wrong with it.
topology::Topology topologyFromJson(const std::string& text, const std::string& source);
/// The topology in `path`, or this host's when `path` is empty.
topology::Topology loadTopology(const std::string& path);

}  // namespace braid::tools
