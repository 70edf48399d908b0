// The choice of algorithm between ranks that reach each other over TCP (other hosts, or BRAID_TRANSPORT=tcp), as
// data: the NetEngine asks core, core asks this (the engine does not reach into tuning), and `braid explain`
// asks it for a machine it describes.
#pragma once

#include <cstddef>
#include <string>

#include "base/config.hpp"

namespace braid::tuning {

enum class NetAlgorithm { kDirect, kDoubling, kRing };
enum class NetReason { kOneRank, kSmall, kSmallManyRanks, kLarge };

struct NetChoice {
  NetAlgorithm algorithm;
  NetReason reason;
};

/// For an allreduce (and, through "not ring", every collective's direct-or-pipelined choice) of `bytes` over
/// `ranks` ranks.
NetChoice chooseNetAllreduce(std::size_t bytes, int ranks, const Settings& settings);
const char* netAlgorithmName(NetAlgorithm algorithm);
/// "ring: 1048576 B > BRAID_DIRECT_MAX_BYTES (65536): reduce-scatter + allgather over 4 ranks, ..."
std::string explainNetAllreduce(const NetChoice& choice, std::size_t bytes, int ranks, const Settings& settings);

/// Whether an allreduce of `bytes` over several hosts with several ranks each goes hierarchical (reduce-scatter
/// inside hosts, allreduce between them, allgather inside) rather than flat over TCP: BRAID_HIERARCHY, else from
/// kHierarchyMinBytes. InvalidArgument for a BRAID_HIERARCHY that is not auto, on or off.
bool useHierarchy(std::size_t bytes, const Settings& settings);
inline constexpr std::size_t kHierarchyMinBytes = 2 * 1024 * 1024;

}  // namespace braid::tuning
