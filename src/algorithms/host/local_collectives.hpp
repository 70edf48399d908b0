// Collectives among the ranks of one host, over a LocalFabric's rounds (see round_sync.hpp). Every collective is
// a sequence of rounds in which each rank copies (part of) its input into its slot, publishes it, and copies or
// reduces what it needs out of its peers' slots; large buffers take several rounds of slotBytes each.
//
// Allreduce has two algorithms:
// - direct: one round per slot of data; every rank reduces every peer's input (n reads per element; the fewest
//   synchronisations, best for small messages);
// - rsag: reduce-scatter then allgather, two rounds per slot; each rank reduces 1/n of the data and copies the
//   rest (2 reads per element; best when bandwidth dominates).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/op_env.hpp"
#include "transport/local_fabric.hpp"
#include "tuning/algorithm.hpp"

namespace braid::host {

/// What allreduce and reduce among the ranks of one host can run, smallest-message first, for the selector.
std::vector<tuning::AlgorithmDescriptor> localAllreduceAlgorithms();

class LocalCollectives {
 public:
  explicit LocalCollectives(transport::LocalFabric& fabric) : fabric_(fabric) {}

  int rank() const { return fabric_.rank(); }
  int size() const { return fabric_.size(); }

  void barrier(const OpEnv& env);
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, tuning::Algorithm algo,
                 const OpEnv& env);
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
              tuning::Algorithm algo, const OpEnv& env);
  void reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op, const OpEnv& env);
  void broadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env);
  void allgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env);
  void allgatherv(const void* send, std::size_t sendCount, void* recv, std::span<const std::size_t> recvCounts,
                  std::span<const std::size_t> displs, DataType type, const OpEnv& env);
  void gather(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env);
  void scatter(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env);
  void alltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env);
  void alltoallv(const void* send, std::span<const std::size_t> sendCounts, std::span<const std::size_t> sendDispls,
                 void* recv, std::span<const std::size_t> recvCounts, std::span<const std::size_t> recvDispls,
                 DataType type, const OpEnv& env);
  /// One round in which this rank tells its peers it rejected its arguments (they fail with Mismatch naming it).
  void reject(const OpEnv& env);

 private:
  // Reduction of `count` elements at byte offset `offset` of every rank's current slot (or round payload) into dst;
  // `own`, when given, stands for this rank's slot there (its input, read where it lies).
  void reduceSlots(void* dst, std::size_t offset, std::size_t count, DataType type, ReduceOp op,
                   const class RoundSync& sync, bool fromPayload = false, const void* own = nullptr);
  void allreduceDirect(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                       const OpEnv& env);
  void allreduceRsag(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                     const OpEnv& env);

  transport::LocalFabric& fabric_;
  std::uint32_t round_ = 0;
  std::vector<const void*> sources_;  // reused per reduction: no allocation per call
};

}  // namespace braid::host
