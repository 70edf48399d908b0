// What braid explain says of one call on a described machine: the transport and algorithm a communicator would
// use and why, from the same selectors and thresholds the communicator's engines use (engine_selectors.hpp), under
// the settings given. introspect.cpp answers the public questions with the environment's settings.
#pragma once

#include <cstddef>
#include <string>

#include "base/config.hpp"
#include "braid/introspect.hpp"
#include "braid/topology.hpp"

namespace braid::core {

/// braid::explainCall under `settings`.
std::string explainCall(const topology::Topology& t, const CallShape& call, const Settings& settings);

/// The public explain*Allreduce under `settings`.
std::string explainSharedMemoryAllreduce(std::size_t bytes, int ranks, int cores, const Settings& settings);
std::string explainTcpAllreduce(std::size_t bytes, int ranks, int nicMbps, const Settings& settings);
std::string explainGpuAllreduce(std::size_t bytes, int ranks, const GpuAllreduceFacts& facts, const Settings& settings);

}  // namespace braid::core
