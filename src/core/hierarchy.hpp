// The hierarchical allreduce of a communicator whose ranks span hosts (algorithms/hierarchical_allreduce.hpp) and the
// engines of its two levels: this host's ranks (shared memory), and the ranks of this rank's local rank on every
// host (TCP). Both are made over the communicator's store at its first such call, without a collective of the
// communicator's (every rank knows its groups from the placement), each with its own device engine for GPU buffers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "algorithms/engine.hpp"
#include "algorithms/hierarchical_allreduce.hpp"
#include "base/error.hpp"
#include "braid/types.hpp"
#include "core/engine_stack.hpp"
#include "core/memory_kind.hpp"
#include "core/placement.hpp"

namespace braid::core {

class CommunicatorImpl;

class Hierarchy {
 public:
  /// Whether `placement` suits the hierarchy: several hosts, the same number (> 1) of ranks on each.
  static bool fits(const Placement& placement);
  /// The levels of `parent` for this rank, joined within the creation timeout (BRAID_TIMEOUT) or until an abort.
  static std::unique_ptr<Hierarchy> make(CommunicatorImpl& parent, const OpEnv& env);

  static bool composes(ReduceOp op) { return HierarchicalAllreduce::composes(op); }
  /// An allreduce on buffers that took `route`: the levels' host engines, or their device engines. A failure closes
  /// both levels, so that their peers learn it at once.
  void allreduce(const Route& route, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                 const OpEnv& env);
  /// From any thread: both levels' engines.
  void abort();
  /// From any thread: a failure of GPU work either level's device engine ran after its call returned.
  std::optional<Error> asyncError(const CallContext& ctx) const;
  /// "hierarchical (reduce-scatter and allgather over shm inside hosts, tcp/ring between)" for a message of `bytes`.
  std::string describe(std::size_t bytes) const;

 private:
  Hierarchy(HierarchyPlace place, std::unique_ptr<EngineStack> inside, std::unique_ptr<EngineStack> between)
      : inside_(std::move(inside)), between_(std::move(between)), algorithm_(std::move(place)) {}

  std::unique_ptr<EngineStack> inside_;   // this host's ranks, in rank order
  std::unique_ptr<EngineStack> between_;  // one rank per host: those of this rank's local rank, in rank order
  HierarchicalAllreduce algorithm_;
};

}  // namespace braid::core
