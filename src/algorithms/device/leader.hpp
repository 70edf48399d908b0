// Collectives of ranks that are processes of their own on one GPU, without MPS. The GPU runs one process's work at
// a time and switching costs ~150-200 us per switch on an H200, so here one process does all of a call's GPU work
// and the others' streams only wait: rank 0 (the leader) maps every rank's buffers by CUDA IPC and reduces or
// copies between them in its own context; a follower's stream writes one word ("my inputs are ready") and waits for
// one word ("your outputs are written"), which the GPU's front end does without a context switch.
//
// A call, on every rank:
//   1. meet: the ranks trade the call's shape (ranks in different calls fail with Mismatch) and name their buffers
//      (cuda::BufferLender: an IPC handle the first time an allocation is seen, a slot number after); a second
//      meeting follows only when the leader had to open a handle, to say whether it could;
//   2. follower: its stream writes the call's number into its word in the leader's workspace, then waits until the
//      leader's word in its own workspace reaches that number; the call returns;
//   3. leader: its stream waits for every follower's word, then runs the call on all the buffers (kernels and
//      copies of one context), then writes each follower's word; the call returns.
// Nothing on the host waits for the GPU. The words only grow and are compared with >=. A lost or aborted peer
// makes release() write past every word this rank waits on, so no stream waits forever; the call's outputs are
// then undefined and the communicator reports the failure. A buffer CUDA IPC cannot share (see BufferLender::lend)
// makes every rank take the fallback (shared_gpu.hpp) for that call.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/device/call_shape.hpp"
#include "algorithms/device/co_located.hpp"
#include "algorithms/device/device_channel.hpp"
#include "algorithms/device/shared_gpu.hpp"
#include "algorithms/engine.hpp"
#include "cuda/runtime/buffer_sharing.hpp"

namespace braid::device {

class LeaderCollectives final : public CoLocatedCollectives {
 public:
  /// Whether this machine can run the path: 64-bit stream memory operations on the current GPU.
  static bool supported();

  /// `host` meets the ranks; `channel` maps every rank's workspace (whose stream words this uses). Both outlive
  /// this. Every rank is a process of its own on the channel's GPU (DeviceChannel::processesOnOneGpu).
  LeaderCollectives(Engine& host, const DeviceChannel& channel, int rank, int size);
  ~LeaderCollectives() override;
  LeaderCollectives(const LeaderCollectives&) = delete;
  LeaderCollectives& operator=(const LeaderCollectives&) = delete;

  const char* algorithm() const override { return "leader"; }
  const char* name() const override {
    return "the leader path (rank 0 maps every rank's buffers and does the GPU work of each call; the other "
           "processes' streams only wait)";
  }
  bool inPlace() const override { return true; }
  std::uint64_t inPlaceCalls() const override { return calls_; }
  bool smallCallsFasterStaged() const override { return false; }
  void release() override;
  bool released() const override { return released_.load(); }

  /// Step 1 for any call, then the leader's work (lead()) or the fallback's.
  void run(const CallArgs& call, const OpEnv& env) override;

 private:
  /// What a rank brings to the first meeting. Plain data.
  struct Arrival {
    CallShape shape;
    double scale;        ///< a premul_sum's factor for this rank's input (1 otherwise)
    std::uint32_t lent;  ///< 1: every buffer this rank was asked for is named below (always 1 on the leader)
    std::uint32_t pad;
    cuda::LentBuffer send;  ///< id 0: not lent (not needed from this rank, or the leader's own)
    cuda::LentBuffer recv;
  };
  /// A buffer of this rank for the call, or null where the call does not need it from this rank.
  struct Mine {
    const void* send;
    std::size_t sendBytes;
    const void* recv;
    std::size_t recvBytes;
  };

  enum class Role {
    kFallback,  ///< some rank's buffer cannot be lent: every rank runs the call on the fallback
    kFollow,    ///< this follower's part is queued: the call is done here
    kLead,      ///< the leader waits for the followers: it queues the call's work, then calls finish()
  };
  /// Step 1's meetings, with `own` this rank's arrival: false when the call falls back (some buffer cannot be lent,
  /// or the leader could not open one). Throws Mismatch when the ranks are in different calls.
  bool meet(const Arrival& own, const OpEnv& env);
  /// Step 3 on the leader, once every follower's inputs are ready: the call's GPU work on every rank's buffers.
  void lead(const CallArgs& c, const OpEnv& env);
  void leadAlltoall(const CallArgs& c, const OpEnv& env);
  /// Steps 1-2, and on the leader the start of step 3.
  Role arrive(const CallShape& shape, const Mine& mine, double scale, const OpEnv& env);
  /// Step 3's end: the followers' streams may go on.
  void finish(const OpEnv& env);
  const std::byte* sendOf(int rank) const;
  std::byte* recvOf(int rank) const;
  /// Every rank's input of a reduction of `count` elements per rank: scaled copies in the scratch where a
  /// premul_sum's factor is not 1. Leader only, after arrive.
  const std::byte* const* reductionInputs(std::size_t count, DataType type, ReduceOp op, const OpEnv& env);
  /// Leader memory for the call (grows; waits for the stream when it does).
  std::byte* scratch(std::size_t bytes, const OpEnv& env);
  std::uint64_t* word(int waiter, int sender) const;

  Engine& host_;
  const DeviceChannel& channel_;
  const int rank_;
  const int size_;
  SharedGpuCollectives fallback_;
  cuda::BufferLender lender_;
  std::vector<std::unique_ptr<cuda::BufferBorrower>> borrowers_;  // the leader's, one per follower
  std::vector<Arrival> arrivals_;
  Mine mine_{};
  std::vector<const std::byte*> inputs_;
  std::uint64_t calls_ = 0;  // every rank counts the same calls: the words' values
  std::byte* scratch_ = nullptr;
  std::size_t scratchBytes_ = 0;
  cudaStream_t releaseStream_ = nullptr;
  std::atomic<bool> released_{false};
};

}  // namespace braid::device
