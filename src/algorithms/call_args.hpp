// One call an engine runs, as plain data: which collective (or point-to-point group), its buffers, counts, type,
// reduction and root. Engines take every call through one entry (Collectives::run) and forward it whole; the
// named forms that build it are defined once, in engine.hpp. The arrays it points to belong to the caller and
// outlive the call.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "algorithms/collective.hpp"
#include "algorithms/staging_layout.hpp"
#include "braid/types.hpp"

namespace braid {

struct CallArgs {
  Collective collective = Collective::kBarrier;
  /// What this rank reads and writes. A broadcast's buffer is both (send == recv); where a buffer is significant at
  /// the root only (reduce's and gather's recv, scatter's send), other ranks may pass anything.
  const void* send = nullptr;
  void* recv = nullptr;
  /// Elements: each rank's input (allreduce, reduce, broadcast, allgather, gather, scatter, alltoall: one block of
  /// the n), each rank's output block (reduce_scatter), this rank's input (allgatherv).
  std::size_t count = 0;
  DataType type = DataType::kUint8;
  ReduceOp op{};
  int root = 0;
  /// Per-rank counts and displacements, in elements: alltoallv's send side; allgatherv's and alltoallv's receive
  /// side.
  std::span<const std::size_t> sendCounts{}, sendDispls{}, recvCounts{}, recvDispls{};
  /// A point-to-point group's operations.
  std::span<const P2pOp> ops{};

  static CallArgs barrier() { return {}; }
  /// This rank rejected its arguments for the call: its peers fail theirs with Mismatch.
  static CallArgs rejected() { return {.collective = Collective::kRejected}; }
  static CallArgs allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
    return {.collective = Collective::kAllreduce, .send = send, .recv = recv, .count = count, .type = type, .op = op};
  }
  static CallArgs reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root) {
    return {.collective = Collective::kReduce,
            .send = send,
            .recv = recv,
            .count = count,
            .type = type,
            .op = op,
            .root = root};
  }
  static CallArgs reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op) {
    return {.collective = Collective::kReduceScatter,
            .send = send,
            .recv = recv,
            .count = recvCount,
            .type = type,
            .op = op};
  }
  static CallArgs broadcast(void* buf, std::size_t count, DataType type, int root) {
    return {.collective = Collective::kBroadcast, .send = buf, .recv = buf, .count = count, .type = type, .root = root};
  }
  static CallArgs allgather(const void* send, void* recv, std::size_t count, DataType type) {
    return {.collective = Collective::kAllgather, .send = send, .recv = recv, .count = count, .type = type};
  }
  static CallArgs allgatherv(const void* send, std::size_t sendCount, void* recv,
                             std::span<const std::size_t> recvCounts, std::span<const std::size_t> displs,
                             DataType type) {
    return {.collective = Collective::kAllgatherv,
            .send = send,
            .recv = recv,
            .count = sendCount,
            .type = type,
            .recvCounts = recvCounts,
            .recvDispls = displs};
  }
  static CallArgs gather(const void* send, void* recv, std::size_t count, DataType type, int root) {
    return {.collective = Collective::kGather, .send = send, .recv = recv, .count = count, .type = type, .root = root};
  }
  static CallArgs scatter(const void* send, void* recv, std::size_t count, DataType type, int root) {
    return {.collective = Collective::kScatter, .send = send, .recv = recv, .count = count, .type = type, .root = root};
  }
  static CallArgs alltoall(const void* send, void* recv, std::size_t count, DataType type) {
    return {.collective = Collective::kAlltoall, .send = send, .recv = recv, .count = count, .type = type};
  }
  static CallArgs alltoallv(const void* send, std::span<const std::size_t> sendCounts,
                            std::span<const std::size_t> sendDispls, void* recv,
                            std::span<const std::size_t> recvCounts, std::span<const std::size_t> recvDispls,
                            DataType type) {
    return {.collective = Collective::kAlltoallv,
            .send = send,
            .recv = recv,
            .type = type,
            .sendCounts = sendCounts,
            .sendDispls = sendDispls,
            .recvCounts = recvCounts,
            .recvDispls = recvDispls};
  }
  static CallArgs pointToPoint(std::span<const P2pOp> ops) {
    return {.collective = Collective::kPointToPoint, .ops = ops};
  }
};

/// The device ranges `call` reads and writes on rank `rank` of `size`, in a fixed order: for a collective its send
/// range then its recv range (a null `at` where the call passes no buffer of significance on this rank), for a
/// point-to-point group one range per operation. What a staged call copies in and back (staging_layout.hpp).
std::vector<DeviceExtent> deviceExtentsOf(const CallArgs& call, int rank, int size);

/// `call` on other buffers: `at[i]` in place of the buffer of deviceExtentsOf(call)[i]. A point-to-point group's
/// operations are rewritten into `ops`, which the result points to.
CallArgs onBuffers(const CallArgs& call, std::span<void* const> at, std::vector<P2pOp>& ops);

}  // namespace braid
