// `braid explain`'s answer: which transport and algorithm braid will use for one collective of a given size on a
// machine (a Topology), and why: the same decisions the communicator makes, asked of the same tuning tables.
#pragma once

#include <cstddef>
#include <string>

#include "base/config.hpp"
#include "topology/topology.hpp"

namespace braid::tools {

struct CallShape {
  std::string collective = "allreduce";
  std::size_t bytes = 0;
  bool device = false;  ///< GPU buffers
  int ranks = 2;        ///< in all
  int hosts = 1;        ///< ranks spread evenly over this many hosts like this one
};

/// Throws braid::Error (kInvalidArgument) for a collective braid does not have or an impossible shape.
std::string explainCall(const topology::Topology& t, const CallShape& call, const Settings& settings);

}  // namespace braid::tools
