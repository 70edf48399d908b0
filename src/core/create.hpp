// Factories beyond the public ones, for tests and tools that must set knobs per communicator rather than through
// the process environment (thread ranks of one test share one environment).
#pragma once

#include <memory>

#include "base/config.hpp"
#include "braid/braid.hpp"

namespace braid::core {

/// Communicator::create with explicit settings instead of the environment's.
std::unique_ptr<Communicator> createWithSettings(const UniqueId& id, int rank, int size, const Settings& settings);

}  // namespace braid::core
