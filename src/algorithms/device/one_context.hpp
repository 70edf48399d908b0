// Collectives of ranks that are threads of one process on one GPU. One CUDA context holds every rank's buffers,
// streams and events, so a rank's stream can wait for a peer's stream (cudaStreamWaitEvent) and its kernels and
// copies can read and write the peers' buffers where they lie: no copy into a workspace, no host wait for the GPU,
// and still no kernel that waits for another stream's kernel (the kernels of two streams need not be resident
// together, so one spinning for the other might never see it run).
//
// A call, on every rank:
//   1. arrive: record `arrived` on the stream (the inputs are written and earlier work is done: the rank's buffers
//      may now be read, its outputs written), then meet the peers on the host, trading the call's shape (ranks in
//      different calls fail with Mismatch) and the buffers' addresses;
//   2. work:   the stream waits for every peer's `arrived`, then queues this rank's share of the call: a slice of
//      a reduction written to every rank's output, or the copies into its own output;
//   3. leave:  record `done`, meet the peers again (a barrier), then the stream waits for every peer's `done`: the
//      stream's next work sees the outputs complete and no peer reading the inputs any more.
// An event is recorded again only after a meeting that follows every peer's wait on it, so each wait sees this
// call's record. The call returns with its work queued, as stream semantics ask; CUDA graph capture is refused
// by the caller (a captured wait on another stream's uncaptured event is not allowed).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/device/call_shape.hpp"
#include "algorithms/device/co_located.hpp"
#include "algorithms/engine.hpp"

namespace braid::device {

class OneContextCollectives final : public CoLocatedCollectives {
 public:
  /// Collective over `host`, which outlives this: every rank constructs it within the same call, each on its own
  /// thread of this process, with the GPU they share current.
  OneContextCollectives(Engine& host, int rank, int size, const OpEnv& env);
  ~OneContextCollectives() override;
  OneContextCollectives(const OneContextCollectives&) = delete;
  OneContextCollectives& operator=(const OneContextCollectives&) = delete;

  const char* algorithm() const override { return "shared_in_place"; }
  const char* name() const override { return "the shared-GPU path (one context: buffers read in place)"; }
  bool inPlace() const override { return true; }
  std::uint64_t inPlaceCalls() const override { return calls_; }

  void run(const CallArgs& call, const OpEnv& env) override { runByName(*this, call, env); }

  // The collectives, as run() calls them.
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, const OpEnv& env);
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root, const OpEnv& env);
  void reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op, const OpEnv& env);
  void broadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env);
  void allgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env);
  void gather(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env);
  void scatter(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env);
  void alltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env);

 private:
  struct Events;
  /// What a rank brings to the first meeting.
  struct Arrival {
    CallShape shape;
    std::uint64_t send;
    std::uint64_t recv;
  };

  /// Step 1, then the waits of step 2; afterwards sendOf/recvOf name every rank's buffers.
  void arrive(const CallShape& shape, const void* send, const void* recv, const OpEnv& env);
  /// Step 3.
  void leave(const OpEnv& env);
  const std::byte* sendOf(int rank) const;
  std::byte* recvOf(int rank) const;
  /// This rank's input of a reduction: `send`, or for a premul_sum with a scale other than 1 a scaled copy.
  const void* scaledInput(const void* send, std::size_t count, DataType type, ReduceOp op, const OpEnv& env);
  /// Device memory of this rank that its peers may read during the call it is taken for.
  void* scratch(std::size_t bytes, const OpEnv& env);

  Engine& host_;
  const int rank_;
  const int size_;
  std::shared_ptr<Events> mine_;
  std::vector<std::shared_ptr<Events>> all_;  // every rank's, kept alive while any rank may still wait on them
  std::vector<Arrival> arrivals_;
  std::vector<const void*> sources_;
  void* scratch_ = nullptr;
  std::size_t scratchBytes_ = 0;
  std::uint64_t calls_ = 0;
};

}  // namespace braid::device
