// Whether an allreduce across hosts goes hierarchical: a choice between two compositions of engines (core/
// hierarchy.hpp), not between algorithms of one engine, so it is a threshold of its own.
#pragma once

#include <cstddef>

#include "base/config.hpp"

namespace braid::tuning {

/// Whether an allreduce of `bytes` over several hosts with several ranks each goes hierarchical (reduce-scatter
/// inside hosts, allreduce between them, allgather inside) rather than flat over TCP: BRAID_HIERARCHY, else from
/// BRAID_HIERARCHY_MIN_BYTES. InvalidArgument for a BRAID_HIERARCHY that is not auto, on or off.
bool useHierarchy(std::size_t bytes, const Settings& settings);

}  // namespace braid::tuning
