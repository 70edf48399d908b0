// The torch.distributed backend "braid": a c10d::Backend over one braid::Communicator, for CPU and CUDA tensors
// (braid looks at each tensor's pointer). Ops on CPU tensors are queued on the communicator's progress thread and
// return at once (DDP overlaps them with the backward pass), except small ones, which run on the caller's thread; ops
// on CUDA tensors are queued on braid's own stream of the tensor's device, after the work the caller queued on its
// current stream, so they overlap the caller's later work until it waits for them (Work::wait), as NCCL's do, except
// those the caller waits for at once (async_op=False), which go on its current stream.
// Point-to-point ops finish before they return.
#pragma once

#include <torch/version.h>

// c10d::Backend::split with the signature below: the torch releases this is built and tested with.
#define BRAID_TORCH_SPLITS (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 15))

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "braid/braid.hpp"
#include "braid_work.hpp"

namespace braid_torch {

class Dense;

/// What an op's c10d options say about launching it: its timeout (0: the group's), and whether the caller waits for
/// it at once (async_op=False). torch 2.7 and newer tell backends in the options' asyncOp; with older ones braid
/// cannot know, and takes every op as asynchronous.
struct LaunchOptions {
  std::chrono::milliseconds timeout{0};
  bool callerWaits = false;

  LaunchOptions(std::chrono::milliseconds t = std::chrono::milliseconds(0)) : timeout(t) {}  // NOLINT: implicit
  template <typename Options>
  static LaunchOptions of(const Options& opts) {
    LaunchOptions o(opts.timeout);
    if constexpr (requires { opts.asyncOp; }) o.callerWaits = !opts.asyncOp;
    return o;
  }
};

class BraidBackend final : public c10d::Backend {
 public:
  BraidBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout);
  ~BraidBackend() override;

  /// What torch.distributed.Backend.register_backend calls: (store, rank, size, timeout).
  static c10::intrusive_ptr<c10d::Backend> create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                  const std::chrono::duration<float>& timeout);

  const std::string getBackendName() const override { return "braid"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits, std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  /// dist.recv / dist.irecv with src=None (CPU tensors): the first message with `tag` from any rank; the Work's
  /// _source_rank() says whose.
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // abort, shutdown, setTimeout and supportsCoalescing joined c10d::Backend in later torch releases than the
  // oldest this backend builds against: declared without `override`, they override where the base has them and
  // are plain members where it does not (same signatures as the base's).

  /// Makes every running and queued op end with Aborted, and every later one fail (from any thread).
  void abort();  // NOLINT(modernize-use-override): see above
  /// What destroy_process_group calls: lets queued ops finish, then frees the communicator; later ops fail.
  void shutdown();                                                            // NOLINT(modernize-use-override)
  void setTimeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }  // NOLINT(modernize-use-override)

  /// Coalescing (batch_isend_irecv, _coalescing_manager): sends and receives between start and end go out as one
  /// braid group, which never deadlocks whatever order the ranks posted them in; collectives run as usual.
  bool supportsCoalescing() const { return true; }  // NOLINT(modernize-use-override)
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
#if BRAID_TORCH_SPLITS
  // dist.split_group.
  bool supportsSplitting() const override { return true; }
  /// What torch copies into a split's options: the backend's name and its timeout.
  c10::intrusive_ptr<Options> getBackendOptions() override { return c10::make_intrusive<Options>("braid", timeout_); }
  /// The backend of this rank's split: its members meet through `store`, which torch namespaced for that split, as
  /// Gloo's split does; a rank in none of the splits gets none.
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
#endif
  /// braid's count of this communicator's collectives (the same on every rank while they agree).
  uint64_t getSequenceNumberForGroup() override;
  void setSequenceNumberForGroup() override {}

  /// The communicator; throws once the backend was shut down.
  braid::Communicator& communicator();

 private:
  /// Makes the braid calls of one op: the async forms when `async` (CPU tensors), else the blocking ones (CUDA
  /// tensors: those return once queued on `options.stream`). Returns the async calls' Works.
  using Issue = std::function<std::vector<braid::Work>(bool async, const braid::CallOptions& options)>;
  /// Runs one op whose tensors are like `like` (an undefined tensor: a host op), returning its c10d::Work; `after`
  /// runs once its calls succeeded (copies into the caller's tensors), `keep` lives until then.
  c10::intrusive_ptr<BraidWork> launch(c10d::OpType type, const at::Tensor& like, std::vector<at::Tensor> outputs,
                                       std::vector<at::Tensor> keep, LaunchOptions options, const Issue& issue,
                                       std::function<void()> after = {});
  /// A *_coalesced op: `call` makes the braid call of one (input, output) pair; one Work for all of them.
  using PairCall = std::function<braid::Work(bool async, Dense& in, Dense& out, const braid::CallOptions& options)>;
  c10::intrusive_ptr<c10d::Work> launchPairs(c10d::OpType type, std::vector<at::Tensor>& inputs,
                                             std::vector<at::Tensor>& outputs, LaunchOptions options,
                                             const PairCall& call);
  /// A send or receive posted inside a coalescing region: recorded, and its Work completes with the group's.
  c10::intrusive_ptr<c10d::Work> coalesce(c10d::OpType type, const at::Tensor& tensor, int peer, int tag);

  /// CPU ops the caller waits for at once, up to this many bytes, run on the caller's thread (see launch()): on the
  /// 2-core VM a hand-off to braid's progress thread and back cost 26-145 us, the op itself ~10 us.
  static constexpr std::size_t kInlineBytes = 256 * 1024;
  /// braid's stream on `device` (a high-priority one from torch's pool, taken at the first op there).
  c10::Stream streamOn(c10::Device device);
  /// The event braid's stream on `device` waits on for the caller's inputs: one per device, recorded again for every
  /// op (a stream wait takes the event's state when it is queued), since making an event costs host time.
  c10::Event& inputsReadyOn(c10::Device device);

  // Ops run on the caller's thread; shutdown() comes after them (torch calls it from destroy_process_group).
  std::unique_ptr<braid::Communicator> comm_;
  std::map<c10::DeviceIndex, c10::Stream> streams_;
  std::map<c10::DeviceIndex, c10::Event> inputsReady_;
  std::chrono::milliseconds timeout_;
  // The last CPU op's braid calls: an endCoalescing without point-to-point ops completes after them.
  std::vector<braid::Work> lastWorks_;
  // Between startCoalescing and endCoalescing: the point-to-point ops posted, what they touch, their works.
  struct Coalesced;
  std::unique_ptr<Coalesced> coalesced_;
};

}  // namespace braid_torch
