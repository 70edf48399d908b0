// Allreduce across hosts in three steps: inside each host a reduce-scatter, between hosts an allreduce of each
// local rank's shard among the ranks of equal local rank (the local ranks' rings run at once), then inside each host
// an allgather. Each rank sends n / L bytes between hosts instead of n, and the inter-host schedule has H ranks
// instead of H x L. Composed of two engines' collectives, whichever they are (shared memory or GPU kernels inside,
// the network between, staged or not): the steps run as calls of those engines, numbered by this object, so the
// communicator's call stays one call with one sequence number and one flight record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "algorithms/engine.hpp"

namespace braid {

/// The ranks of one level (the communicator's, in the level's rank order) and this rank's place among them.
struct HierarchyLevel {
  std::vector<int> ranks;
  int mine = 0;

  int size() const { return static_cast<int>(ranks.size()); }
};

/// Where this rank stands in the hierarchy: among its host's ranks, and among the ranks between hosts.
struct HierarchyPlace {
  HierarchyLevel inside;
  HierarchyLevel between;
};

class HierarchicalAllreduce {
 public:
  explicit HierarchicalAllreduce(HierarchyPlace place) : place_(std::move(place)) {}

  const HierarchyPlace& place() const { return place_; }

  /// `op` must be one the steps compose exactly: not average (integer averages would truncate twice) or premul sum.
  static bool composes(ReduceOp op);

  /// One allreduce: `inside` runs among this host's ranks, `between` among the ranks of this rank's local rank on
  /// every host (one per host, in host order). Every rank of the communicator makes the same calls in the same
  /// order, so each engine's calls are numbered alike on all its ranks. A step's failure names the step, and its peer
  /// as the communicator numbers it.
  void run(Collectives& inside, Collectives& between, const void* send, void* recv, std::size_t count, DataType type,
           ReduceOp op, const OpEnv& env);

 private:
  /// The environment of a step on one engine: the call's, with this rank's rank among that engine's ranks (engines
  /// read it from there) and numbered in that engine's own sequence.
  static OpEnv stepEnv(const OpEnv& env, const HierarchyLevel& level, std::int64_t& seq);

  const HierarchyPlace place_;
  std::int64_t insideCalls_ = 0;   // steps run on the engine inside the host
  std::int64_t betweenCalls_ = 0;  // steps run on the engine between hosts
};

}  // namespace braid
