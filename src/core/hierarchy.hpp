// Allreduce across hosts in three steps: inside each host a reduce-scatter (shared memory), between hosts
// an allreduce of each local rank's shard among the ranks of equal local rank (TCP; the local ranks' rings run at
// once), then inside each host an allgather. Each rank sends n / L bytes between hosts instead of n, and the
// inter-host schedule has H ranks instead of H x L. The two sub-communicators are made from the parent's store at
// the first such call, without a collective of the parent's (every rank knows its groups from the placement).
#pragma once

#include <cstddef>
#include <memory>

#include "algorithms/engine.hpp"
#include "braid/braid.hpp"
#include "core/placement.hpp"

namespace braid::core {

class CommunicatorImpl;

class Hierarchy {
 public:
  /// Whether `placement` suits the hierarchy: several hosts, the same number (> 1) of ranks on each.
  static bool fits(const Placement& placement);
  /// The sub-communicators of `parent` for this rank: its host's ranks, and the ranks of its local rank.
  static std::unique_ptr<Hierarchy> make(CommunicatorImpl& parent);

  /// `op` must be one the steps compose exactly: not average (integer averages would truncate twice) or premul sum.
  static bool composes(ReduceOp op);
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, const OpEnv& env);
  void abort();
  /// "hierarchical (shm/rsag inside hosts, tcp/ring between)" for a message of `bytes`.
  std::string describe(std::size_t bytes) const;

 private:
  Hierarchy(std::unique_ptr<Communicator> local, std::unique_ptr<Communicator> cross)
      : local_(std::move(local)), cross_(std::move(cross)) {}

  std::unique_ptr<Communicator> local_;  // this host's ranks, in rank order
  std::unique_ptr<Communicator> cross_;  // one rank per host: those of this rank's local rank
};

}  // namespace braid::core
