// Collectives on device buffers for ranks of which some share a GPU. Without MPS a GPU runs one process's work at a
// time, in time slices of about 2 ms: a kernel that spins until another process's kernel has written to it waits
// out a slice per call (2.3 ms for two processes on one H200), and a stream waiting on another process's event
// costs ~150 us. Threads of one process share a context, but the kernels of their streams need not be resident
// together, so one spinning for the other may never see it run. So here nothing on the GPU waits for another rank:
//
//   1. publish: each rank copies its contribution to a piece of the call into its own workspace (the copy engine);
//   2. meet:    the host waits for that copy (and so for everything before it on the stream), then meets its peers
//               through the host engine (shared memory: about a microsecond), trading what each rank called (op,
//               type, count, root, piece), so that ranks in different calls fail with Mismatch, not wrong data;
//   3. consume: each rank makes its part of the output from the published pieces of every rank, which are complete,
//               with copies and the reduction kernels of cuda/runtime/device_reduce.hpp, queued on its stream.
//
// The call returns with step 3 queued, as stream semantics ask. Pieces alternate between two areas of each
// workspace (parities): a rank publishes into parity q again two meetings later, and each peer's arrival at the
// meeting in between waited for its stream, which ran the peer's reads of parity q before. One rank's calls must
// all run on one stream, or be joined to the previous one (DeviceEngine does that).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/device/call_shape.hpp"
#include "algorithms/device/co_located.hpp"
#include "algorithms/device/device_channel.hpp"
#include "algorithms/engine.hpp"

namespace braid::device {

class SharedGpuCollectives final : public CoLocatedCollectives {
 public:
  /// `host` meets the ranks; `channel` maps every rank's workspace (whose data area this uses as two parities).
  /// Both outlive this.
  SharedGpuCollectives(Engine& host, const DeviceChannel& channel, int rank, int size);
  ~SharedGpuCollectives() override;
  SharedGpuCollectives(const SharedGpuCollectives&) = delete;
  SharedGpuCollectives& operator=(const SharedGpuCollectives&) = delete;

  const char* algorithm() const override { return "shared"; }
  const char* name() const override { return "the shared-GPU path (pieces published in the workspaces)"; }
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
  /// `rank`'s area of `parity`.
  std::byte* area(int rank, int parity) const;
  /// Names the call for the meetings of its pieces and orders it after the previous call (every public method
  /// starts with it).
  void begin(DataType type, std::size_t count, int root, std::uint32_t kind, const OpEnv& env);
  /// After the last piece's reads are queued: what the next call's stream waits for.
  void end(const OpEnv& env);
  /// Step 2: waits for this rank's stream, then for every rank to have done so with the same call at piece `offset`.
  /// Returns the parity of the piece just published and moves on to the other one.
  int meet(std::size_t offset, const OpEnv& env);
  /// Steps 1-3 of a reduction, piece by piece: each rank publishes `blocks` blocks of a piece (block b from send +
  /// b * blockStride elements, scaled for a premul_sum); when `consume`, a rank reduces its block (block `rank` when
  /// there are several, else the one) of every rank's area into recv.
  void reducing(const void* send, std::size_t count, std::size_t blocks, std::size_t blockStride, DataType type,
                ReduceOp op, bool consume, void* recv, const OpEnv& env);
  /// Steps 1-3 of a collective that moves data: publish `blocks` blocks of each piece when `publishes`, then queue
  /// `consume(parity, offset, elements, pitch)`'s copies out of the areas of that parity (block b at b * pitch).
  template <typename Consume>
  void moving(const void* send, std::size_t count, std::size_t blocks, std::size_t blockStride, std::size_t unit,
              bool publishes, const OpEnv& env, Consume&& consume);
  /// Queues the copy of `blocks` blocks of `elements` from src (blocks `stride` elements apart) into this rank's area
  /// of the current parity, block b at b * `pitch` elements.
  void publish(const std::byte* src, std::size_t blocks, std::size_t stride, std::size_t elements, std::size_t pitch,
               std::size_t unit, DataType type, double scale, cudaStream_t stream);

  Engine& host_;
  const DeviceChannel& channel_;
  const int rank_;
  const int size_;
  const std::size_t areaBytes_;
  int parity_ = 0;
  std::uint64_t pieces_ = 0;
  cudaEvent_t published_ = nullptr;
  cudaEvent_t done_ = nullptr;  // recorded after each call's last reads
  bool doneRecorded_ = false;
  std::vector<const void*> sources_;
  CallShape shape_{};  // `piece` counts every piece this object met
  std::vector<CallShape> shapes_;
};

}  // namespace braid::device
