// This host as the library sees it: detected once per process, for the selectors.
#pragma once

#include "topology/topology.hpp"

namespace braid::core {

const topology::Topology& thisHost();

}  // namespace braid::core
