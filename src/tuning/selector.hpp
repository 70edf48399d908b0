// Picks an algorithm for a call from its size and the group, and says why (logs, `braid bench`, later
// `braid explain`). The numbers it uses are data: knobs declared in base/config.cpp, later measured tables.
// Choosing is on every call's path, so it builds no strings; explain() does that when asked.
#pragma once

#include <cstddef>
#include <string>

#include "base/config.hpp"

namespace braid::tuning {

/// Which calls an algorithm name applies to: host buffers or device buffers.
enum class Path { kHost, kDevice };
/// The algorithm BRAID_ALGO forces on `path` ("" when none); InvalidArgument for a name braid does not know.
std::string forcedAlgorithm(const Settings& settings, Path path);

enum class LocalReduceAlgorithm { kDirect, kRsag };

enum class Reason { kForced, kTwoRanks, kSmall, kLarge };

struct Choice {
  LocalReduceAlgorithm algorithm;
  Reason reason;
};

/// For allreduce and reduce among the ranks of one host. Throws InvalidArgument for an unknown BRAID_ALGO.
Choice chooseLocalReduce(std::size_t bytes, int ranks, const Settings& settings);
const char* algorithmName(LocalReduceAlgorithm algorithm);
/// "rsag: 1048576 B > BRAID_DIRECT_MAX_BYTES (65536 B): each rank reduces 1/4 of the data"
std::string explain(const Choice& choice, std::size_t bytes, int ranks, const Settings& settings);

}  // namespace braid::tuning
