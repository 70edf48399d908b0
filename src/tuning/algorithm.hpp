// What an algorithm says of itself, so that one selector can weigh it against the others: plain data that the
// algorithm's own code declares (e.g. algorithms/host/local_reduce.cpp) and tuning/selector reads. An engine is
// handed back the Algorithm it declared and runs it; nothing translates between the two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "braid/cost_model.hpp"

namespace braid::tuning {

/// Every algorithm a selector can choose, across engines.
enum class Algorithm : std::uint8_t {
  kShmDirect,
  kShmRsag,
  kTcpDirect,
  kTcpDoubling,
  kTcpRing,
  kGpuLL,
  kGpuOneShot,
  kGpuTwoShot,
  kGpuStaged,
  kGpuShared,
};

struct AlgorithmDescriptor {
  Algorithm id;
  const char* name;       ///< what BRAID_ALGO and the logs call it ("direct")
  Collective collective;  ///< what it computes
  Link link;              ///< what joins the ranks it runs among
  Schedule schedule;      ///< its shape, which the cost model prices
  std::size_t minBytes = 0;
  std::size_t maxBytes = std::numeric_limits<std::size_t>::max();
  int minRanks = 1;
  /// Bandwidth-bound (segments pipelined, fewer bytes per rank, more steps): the side of a measured crossover
  /// (BRAID_DIRECT_MAX_BYTES) that takes the larger calls.
  bool pipelined = false;
  /// False where the cost model has no schedule for it (a path chosen by the machine's constraints and measured
  /// sizes, as staging through host memory): the selector takes it only where no modelled candidate applies.
  bool modelled = true;
  const char* how = "";  ///< one line for explain(): what each rank does
};

}  // namespace braid::tuning
