#include "braid_backend.hpp"

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <numeric>
#include <string>

#include "braid_work.hpp"
#include "torch_store.hpp"

namespace braid_torch {

namespace {

using c10d::OpType;
using Works = std::vector<braid::Work>;

braid::DataType dataTypeOf(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return braid::DataType::kFloat32;
    case at::kDouble:
      return braid::DataType::kFloat64;
    case at::kHalf:
      return braid::DataType::kFloat16;
    case at::kBFloat16:
      return braid::DataType::kBFloat16;
    case at::kInt:
      return braid::DataType::kInt32;
    case at::kLong:
      return braid::DataType::kInt64;
    case at::kChar:
      return braid::DataType::kInt8;
    case at::kByte:
      return braid::DataType::kUint8;
    case at::kBool:
      return braid::DataType::kBool;
    case at::kUInt32:
      return braid::DataType::kUint32;
    case at::kUInt64:
      return braid::DataType::kUint64;
    default:
      TORCH_CHECK(
          false, "braid: tensors of dtype ", t.scalar_type(),
          " are not supported (float32, float64, float16, bfloat16, int8, uint8, int32, uint32, int64, uint64, bool)");
  }
}

braid::ReduceOp reduceOpOf(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return braid::ReduceKind::kSum;
    case c10d::ReduceOp::AVG:
      return braid::ReduceKind::kAvg;
    case c10d::ReduceOp::PRODUCT:
      return braid::ReduceKind::kProd;
    case c10d::ReduceOp::MIN:
      return braid::ReduceKind::kMin;
    case c10d::ReduceOp::MAX:
      return braid::ReduceKind::kMax;
    case c10d::ReduceOp::BAND:
      return braid::ReduceKind::kBand;
    case c10d::ReduceOp::BOR:
      return braid::ReduceKind::kBor;
    case c10d::ReduceOp::BXOR:
      return braid::ReduceKind::kBxor;
    case c10d::ReduceOp::PREMUL_SUM: {
      const auto* s = dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(s != nullptr, "braid: PREMUL_SUM without its factor");
      const double factor = s->tensor_factor.defined() ? s->tensor_factor.item<double>() : s->double_factor;
      return braid::ReduceOp::premulSum(factor);
    }
    default:
      TORCH_CHECK(false, "braid: reduce op ", static_cast<int>(op.op_), " is not supported");
  }
}

// A tensor as one dense buffer: itself when contiguous, else a contiguous copy that goes back when done.
class Dense {
 public:
  explicit Dense(at::Tensor t) : original_(std::move(t)), dense_(original_.contiguous()) {}
  void* data() { return dense_.data_ptr(); }
  std::size_t count() const { return static_cast<std::size_t>(dense_.numel()); }
  braid::DataType type() const { return dataTypeOf(dense_); }
  /// Writes the result back into a non-contiguous original.
  void finish() {
    if (!dense_.is_same(original_)) original_.copy_(dense_);
  }
  const at::Tensor& tensor() const { return dense_; }
  /// Both tensors, to keep alive until the op ends.
  std::vector<at::Tensor> tensors() const { return {original_, dense_}; }

 private:
  at::Tensor original_;
  at::Tensor dense_;
};

void requireOne(const std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "braid: ", op, " takes one tensor per rank, got ", tensors.size());
}

void requireSameShape(const std::vector<at::Tensor>& list, const at::Tensor& like, const char* op) {
  for (const auto& t : list) {
    TORCH_CHECK(t.numel() == like.numel() && t.scalar_type() == like.scalar_type(), "braid: ", op,
                ": every tensor of the list must match the input (", like.numel(), " x ", like.scalar_type(), "), got ",
                t.numel(), " x ", t.scalar_type());
  }
}

}  // namespace

BraidBackend::BraidBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                           std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size), timeout_(timeout) {
  comm_ = braid::Communicator::create(std::make_shared<TorchStore>(store), rank, size, "braid_torch");
}

c10::intrusive_ptr<c10d::Backend> BraidBackend::create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                       const std::chrono::duration<float>& timeout) {
  return c10::make_intrusive<BraidBackend>(store, rank, size,
                                           std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
}

struct BraidBackend::Coalesced {
  std::vector<braid::P2pOp> ops;
  std::vector<at::Tensor> keep;
  std::vector<std::shared_ptr<Dense>> recvs;
  std::vector<at::Tensor> outputs;
  std::vector<c10::intrusive_ptr<BraidWork>> works;
  at::Tensor like;  // the first tensor posted: where the group runs (CPU or a CUDA device)
};

BraidBackend::~BraidBackend() = default;

uint64_t BraidBackend::getSequenceNumberForGroup() { return static_cast<uint64_t>(communicator().sequenceNumber()); }

void BraidBackend::startCoalescing() {
  TORCH_CHECK(coalesced_ == nullptr, "braid: rank ", rank_, ": startCoalescing inside a coalescing region");
  coalesced_ = std::make_unique<Coalesced>();
}

c10::intrusive_ptr<c10d::Work> BraidBackend::endCoalescing() {
  TORCH_CHECK(coalesced_ != nullptr, "braid: rank ", rank_, ": endCoalescing without startCoalescing");
  const std::unique_ptr<Coalesced> c = std::move(coalesced_);
  if (c->ops.empty()) {
    // Only collectives were posted, each already queued: done when the last of them is.
    return launch(OpType::COALESCED, at::Tensor(), {}, {}, std::chrono::milliseconds(0),
                  [&](bool async, const braid::CallOptions&) -> Works { return async ? lastWorks_ : Works{}; });
  }
  auto recvs = c->recvs;
  auto work = launch(
      OpType::COALESCED, c->like, c->outputs, c->keep, std::chrono::milliseconds(0),
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().groupAsync(c->ops, o)};
        communicator().group(c->ops, o);
        return {};
      },
      [recvs] {
        for (auto& r : recvs) r->finish();
      });
  for (auto& w : c->works) work->completeAlso(w);
  return work;
}

c10::intrusive_ptr<c10d::Work> BraidBackend::coalesce(OpType type, const at::Tensor& tensor, int peer, int tag) {
  Coalesced& c = *coalesced_;
  auto t = std::make_shared<Dense>(tensor);
  const bool send = type == OpType::SEND;
  c.ops.push_back(braid::P2pOp{send ? braid::P2pOp::Kind::kSend : braid::P2pOp::Kind::kRecv, peer, t->data(),
                               t->count(), t->type(), tag});
  for (auto& k : t->tensors()) c.keep.push_back(k);
  if (!send) {
    c.recvs.push_back(t);
    c.outputs.push_back(tensor);
  }
  if (!c.like.defined()) c.like = tensor;
  std::optional<c10::Device> device;
  if (tensor.is_cuda()) device = tensor.device();
  auto work =
      c10::make_intrusive<BraidWork>(rank_, type, std::vector<at::Tensor>{tensor}, std::vector<at::Tensor>{}, device);
  c.works.push_back(work);
  return work;
}

braid::Communicator& BraidBackend::communicator() {
  TORCH_CHECK(comm_ != nullptr, "braid: rank ", rank_, ": the process group was shut down (destroy_process_group)");
  return *comm_;
}

void BraidBackend::abort() {
  if (comm_) comm_->abort();
}

void BraidBackend::shutdown() {
  // The communicator's destructor runs the calls still queued (each ends by its own deadline) and stops its
  // progress thread.
  comm_.reset();
}

c10::intrusive_ptr<BraidWork> BraidBackend::launch(OpType type, const at::Tensor& like, std::vector<at::Tensor> outputs,
                                                   std::vector<at::Tensor> keep, std::chrono::milliseconds timeout,
                                                   const Issue& issue, std::function<void()> after) {
  braid::CallOptions o;
  o.timeout = timeout.count() > 0 ? timeout : timeout_;
  std::optional<c10::Device> device;
  if (like.defined() && like.is_cuda()) {
    // Queued on the current stream of the tensor's device: it runs after what the caller queued there, and what
    // the caller queues next sees its result. The stream comes through c10's device-generic interface, so this
    // file needs no CUDA headers.
    device = like.device();
    o.stream = static_cast<CUstream_st*>(
        c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(*device).native_handle());
  }
  auto work = c10::make_intrusive<BraidWork>(rank_, type, std::move(outputs), std::move(keep), device);
  if (device) {
    issue(false, o);
    if (after) after();
    work->complete(nullptr);
    return work;
  }
  // CPU: queued on braid's progress thread; the Work completes when the last of the op's calls did (calls run in
  // issue order, the first error wins).
  const Works works = issue(true, o);
  if (!works.empty()) lastWorks_ = works;
  struct Countdown {
    std::mutex mu;
    std::size_t left;
    std::exception_ptr error;
  };
  auto countdown = std::make_shared<Countdown>();
  countdown->left = works.empty() ? 1 : works.size();
  auto finish = [work, countdown, after = std::move(after)](std::exception_ptr e) {
    {
      std::lock_guard lock(countdown->mu);
      if (e && !countdown->error) countdown->error = e;
      if (--countdown->left != 0) return;
      e = countdown->error;
    }
    if (!e && after) {
      try {
        after();
      } catch (...) {
        e = std::current_exception();
      }
    }
    work->complete(e);
  };
  if (works.empty()) finish(nullptr);
  for (const braid::Work& w : works) w.onCompletion(finish);
  return work;
}

// ---- The ops. Each describes its braid calls once (async for CPU tensors, stream-ordered for CUDA ones) and
// what must happen after them.

c10::intrusive_ptr<c10d::Work> BraidBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                       const c10d::BroadcastOptions& opts) {
  requireOne(tensors, "broadcast");
  auto t = std::make_shared<Dense>(tensors[0]);
  const int root = static_cast<int>(opts.rootRank);
  return launch(
      OpType::BROADCAST, tensors[0], tensors, t->tensors(), opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().broadcastAsync(t->data(), t->count(), t->type(), root, o)};
        communicator().broadcast(t->data(), t->count(), t->type(), root, o);
        return {};
      },
      [t] { t->finish(); });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                       const c10d::AllreduceOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "braid: allreduce of no tensors");
  const braid::ReduceOp op = reduceOpOf(opts.reduceOp);
  std::vector<std::shared_ptr<Dense>> dense;
  std::vector<at::Tensor> keep;
  for (auto& tensor : tensors) {
    dense.push_back(std::make_shared<Dense>(tensor));
    for (auto& k : dense.back()->tensors()) keep.push_back(k);
  }
  return launch(
      OpType::ALLREDUCE, tensors[0], tensors, std::move(keep), opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        Works works;
        for (auto& t : dense) {
          if (async) {
            works.push_back(communicator().allreduceAsync(t->data(), t->data(), t->count(), t->type(), op, o));
          } else {
            communicator().allreduce(t->data(), t->data(), t->count(), t->type(), op, o);
          }
        }
        return works;
      },
      [dense] {
        for (auto& t : dense) t->finish();
      });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                 const c10d::AllreduceCoalescedOptions& opts) {
  c10d::AllreduceOptions one;
  one.reduceOp = opts.reduceOp;
  one.timeout = opts.timeout;
  return allreduce(tensors, one);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  requireOne(tensors, "reduce");
  auto t = std::make_shared<Dense>(tensors[0]);
  const braid::ReduceOp op = reduceOpOf(opts.reduceOp);
  const int root = static_cast<int>(opts.rootRank);
  return launch(
      OpType::REDUCE, tensors[0], tensors, t->tensors(), opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().reduceAsync(t->data(), t->data(), t->count(), t->type(), op, root, o)};
        communicator().reduce(t->data(), t->data(), t->count(), t->type(), op, root, o);
        return {};
      },
      [t] { t->finish(); });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                             const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(output.numel() == input.numel() * size_, "braid: allgather_into_tensor: output has ", output.numel(),
              " elements, expected ", input.numel(), " x ", size_, " ranks");
  auto in = std::make_shared<Dense>(input);
  auto out = std::make_shared<Dense>(output);
  std::vector<at::Tensor> keep = in->tensors();
  for (auto& k : out->tensors()) keep.push_back(k);
  return launch(
      OpType::_ALLGATHER_BASE, input, {output}, std::move(keep), opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().allgatherAsync(in->data(), out->data(), in->count(), in->type(), o)};
        communicator().allgather(in->data(), out->data(), in->count(), in->type(), o);
        return {};
      },
      [out] { out->finish(); });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::AllgatherOptions& opts) {
  requireOne(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<std::size_t>(size_),
              "braid: allgather needs one output list of ", size_, " tensors");
  requireSameShape(outputs[0], inputs[0], "allgather");
  auto in = std::make_shared<Dense>(inputs[0]);
  at::Tensor flat = at::empty({size_, inputs[0].numel()}, inputs[0].options());
  std::vector<at::Tensor> list = outputs[0];
  std::vector<at::Tensor> keep = in->tensors();
  keep.push_back(flat);
  return launch(
      OpType::ALLGATHER, inputs[0], list, std::move(keep), opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().allgatherAsync(in->data(), flat.data_ptr(), in->count(), in->type(), o)};
        communicator().allgather(in->data(), flat.data_ptr(), in->count(), in->type(), o);
        return {};
      },
      [list, flat, n = size_]() mutable {
        for (int r = 0; r < n; ++r) list[r].copy_(flat[r].view(list[r].sizes()));
      });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                             std::vector<at::Tensor>& inputs,
                                                                             const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size() && !inputs.empty(),
              "braid: allgather_into_tensor_coalesced: ", outputs.size(), " outputs for ", inputs.size(), " inputs");
  std::vector<std::shared_ptr<Dense>> ins, outs;
  std::vector<at::Tensor> keep;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK(outputs[i].numel() == inputs[i].numel() * size_, "braid: allgather_into_tensor_coalesced: output ", i,
                " has ", outputs[i].numel(), " elements, expected ", inputs[i].numel(), " x ", size_, " ranks");
    ins.push_back(std::make_shared<Dense>(inputs[i]));
    outs.push_back(std::make_shared<Dense>(outputs[i]));
    for (auto& k : ins.back()->tensors()) keep.push_back(k);
    for (auto& k : outs.back()->tensors()) keep.push_back(k);
  }
  return launch(
      OpType::COALESCED, inputs[0], outputs, std::move(keep), opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        Works works;
        for (std::size_t i = 0; i < ins.size(); ++i) {
          if (async) {
            works.push_back(
                communicator().allgatherAsync(ins[i]->data(), outs[i]->data(), ins[i]->count(), ins[i]->type(), o));
          } else {
            communicator().allgather(ins[i]->data(), outs[i]->data(), ins[i]->count(), ins[i]->type(), o);
          }
        }
        return works;
      },
      [outs] {
        for (auto& t : outs) t->finish();
      });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                    std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  requireOne(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  auto in = std::make_shared<Dense>(inputs[0]);
  at::Tensor flat;
  std::vector<at::Tensor> list;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<std::size_t>(size_),
                "braid: gather needs one output list of ", size_, " tensors at the root");
    requireSameShape(outputs[0], inputs[0], "gather");
    flat = at::empty({size_, inputs[0].numel()}, inputs[0].options());
    list = outputs[0];
  }
  std::vector<at::Tensor> keep = in->tensors();
  if (flat.defined()) keep.push_back(flat);
  void* recv = flat.defined() ? flat.data_ptr() : nullptr;
  return launch(
      OpType::GATHER, inputs[0], list, std::move(keep), opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().gatherAsync(in->data(), recv, in->count(), in->type(), root, o)};
        communicator().gather(in->data(), recv, in->count(), in->type(), root, o);
        return {};
      },
      [list, flat]() mutable {
        for (std::size_t r = 0; r < list.size(); ++r) {
          list[r].copy_(flat[static_cast<std::int64_t>(r)].view(list[r].sizes()));
        }
      });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::scatter(std::vector<at::Tensor>& outputs,
                                                     std::vector<std::vector<at::Tensor>>& inputs,
                                                     const c10d::ScatterOptions& opts) {
  requireOne(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor flat;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<std::size_t>(size_),
                "braid: scatter needs one input list of ", size_, " tensors at the root");
    requireSameShape(inputs[0], outputs[0], "scatter");
    std::vector<at::Tensor> rows;
    for (const auto& t : inputs[0]) rows.push_back(t.reshape({-1}));
    flat = at::stack(rows);
  }
  auto out = std::make_shared<Dense>(outputs[0]);
  std::vector<at::Tensor> keep = out->tensors();
  if (flat.defined()) keep.push_back(flat);
  const void* send = flat.defined() ? flat.data_ptr() : nullptr;
  return launch(
      OpType::SCATTER, outputs[0], outputs, std::move(keep), opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().scatterAsync(send, out->data(), out->count(), out->type(), root, o)};
        communicator().scatter(send, out->data(), out->count(), out->type(), root, o);
        return {};
      },
      [out] { out->finish(); });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                  const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(input.numel() == output.numel() * size_, "braid: reduce_scatter_tensor: input has ", input.numel(),
              " elements, expected ", output.numel(), " x ", size_, " ranks");
  auto in = std::make_shared<Dense>(input);
  auto out = std::make_shared<Dense>(output);
  const braid::ReduceOp op = reduceOpOf(opts.reduceOp);
  std::vector<at::Tensor> keep = in->tensors();
  for (auto& k : out->tensors()) keep.push_back(k);
  return launch(
      OpType::_REDUCE_SCATTER_BASE, input, {output}, std::move(keep), opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async)
          return {communicator().reduceScatterAsync(in->data(), out->data(), out->count(), out->type(), op, o)};
        communicator().reduceScatter(in->data(), out->data(), out->count(), out->type(), op, o);
        return {};
      },
      [out] { out->finish(); });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                            std::vector<std::vector<at::Tensor>>& inputs,
                                                            const c10d::ReduceScatterOptions& opts) {
  requireOne(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<std::size_t>(size_),
              "braid: reduce_scatter needs one input list of ", size_, " tensors");
  requireSameShape(inputs[0], outputs[0], "reduce_scatter");
  std::vector<at::Tensor> rows;
  for (const auto& t : inputs[0]) rows.push_back(t.reshape({-1}));
  at::Tensor flat = at::cat(rows);
  return _reduce_scatter_base(outputs[0], flat, opts);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                             std::vector<at::Tensor>& inputs,
                                                                             const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size() && !inputs.empty(),
              "braid: reduce_scatter_tensor_coalesced: ", outputs.size(), " outputs for ", inputs.size(), " inputs");
  const braid::ReduceOp op = reduceOpOf(opts.reduceOp);
  std::vector<std::shared_ptr<Dense>> ins, outs;
  std::vector<at::Tensor> keep;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK(inputs[i].numel() == outputs[i].numel() * size_, "braid: reduce_scatter_tensor_coalesced: input ", i,
                " has ", inputs[i].numel(), " elements, expected ", outputs[i].numel(), " x ", size_, " ranks");
    ins.push_back(std::make_shared<Dense>(inputs[i]));
    outs.push_back(std::make_shared<Dense>(outputs[i]));
    for (auto& k : ins.back()->tensors()) keep.push_back(k);
    for (auto& k : outs.back()->tensors()) keep.push_back(k);
  }
  return launch(
      OpType::COALESCED, inputs[0], outputs, std::move(keep), opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        Works works;
        for (std::size_t i = 0; i < ins.size(); ++i) {
          if (async) {
            works.push_back(communicator().reduceScatterAsync(ins[i]->data(), outs[i]->data(), outs[i]->count(),
                                                              outs[i]->type(), op, o));
          } else {
            communicator().reduceScatter(ins[i]->data(), outs[i]->data(), outs[i]->count(), outs[i]->type(), op, o);
          }
        }
        return works;
      },
      [outs] {
        for (auto& t : outs) t->finish();
      });
}

namespace {

// all_to_all_single's splits count rows of the first dimension; braid counts elements.
void splitCounts(const std::vector<int64_t>& splits, const at::Tensor& t, int size, std::vector<std::size_t>& counts,
                 std::vector<std::size_t>& displs) {
  const std::int64_t rows = t.dim() > 0 ? t.size(0) : 1;
  const std::size_t perRow = rows > 0 ? static_cast<std::size_t>(t.numel() / rows) : 0;
  counts.assign(static_cast<std::size_t>(size), 0);
  displs.assign(static_cast<std::size_t>(size), 0);
  std::size_t at = 0;
  for (int r = 0; r < size; ++r) {
    const std::size_t n = splits.empty() ? static_cast<std::size_t>(rows / size) * perRow
                                         : static_cast<std::size_t>(splits[static_cast<std::size_t>(r)]) * perRow;
    counts[static_cast<std::size_t>(r)] = n;
    displs[static_cast<std::size_t>(r)] = at;
    at += n;
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Work> BraidBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                           std::vector<int64_t>& outputSplits,
                                                           std::vector<int64_t>& inputSplits,
                                                           const c10d::AllToAllOptions& opts) {
  auto in = std::make_shared<Dense>(input);
  auto out = std::make_shared<Dense>(output);
  std::vector<at::Tensor> keep = in->tensors();
  for (auto& k : out->tensors()) keep.push_back(k);
  const bool even = outputSplits.empty() && inputSplits.empty();
  if (even) {
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % size_ == 0,
                "braid: all_to_all_single: ", input.numel(), " input and ", output.numel(),
                " output elements do not split evenly over ", size_, " ranks");
  }
  std::vector<std::size_t> sc, sd, rc, rd;
  if (!even) {
    splitCounts(inputSplits, input, size_, sc, sd);
    splitCounts(outputSplits, output, size_, rc, rd);
  }
  const std::size_t block = in->count() / static_cast<std::size_t>(size_);
  return launch(
      OpType::ALLTOALL_BASE, input, {output}, std::move(keep), opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (even) {
          if (async) return {communicator().alltoallAsync(in->data(), out->data(), block, in->type(), o)};
          communicator().alltoall(in->data(), out->data(), block, in->type(), o);
          return {};
        }
        if (async) return {communicator().alltoallvAsync(in->data(), sc, sd, out->data(), rc, rd, in->type(), o)};
        communicator().alltoallv(in->data(), sc, sd, out->data(), rc, rd, in->type(), o);
        return {};
      },
      [out] { out->finish(); });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                                      const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(outputs.size() == static_cast<std::size_t>(size_) && inputs.size() == static_cast<std::size_t>(size_),
              "braid: all_to_all needs ", size_, " input and output tensors");
  std::vector<at::Tensor> rows;
  std::vector<std::size_t> sc, sd, rc, rd;
  std::size_t at = 0;
  for (const auto& t : inputs) {
    rows.push_back(t.reshape({-1}));
    sc.push_back(static_cast<std::size_t>(t.numel()));
    sd.push_back(at);
    at += static_cast<std::size_t>(t.numel());
  }
  at::Tensor in = at::cat(rows);
  at = 0;
  for (const auto& t : outputs) {
    rc.push_back(static_cast<std::size_t>(t.numel()));
    rd.push_back(at);
    at += static_cast<std::size_t>(t.numel());
  }
  at::Tensor out = at::empty({static_cast<std::int64_t>(at)}, outputs[0].options());
  const braid::DataType type = dataTypeOf(in);
  return launch(
      OpType::ALLTOALL, inputs[0], outputs, {in, out}, opts.timeout,
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().alltoallvAsync(in.data_ptr(), sc, sd, out.data_ptr(), rc, rd, type, o)};
        communicator().alltoallv(in.data_ptr(), sc, sd, out.data_ptr(), rc, rd, type, o);
        return {};
      },
      [outputs, out, rd]() mutable {
        for (std::size_t r = 0; r < outputs.size(); ++r) {
          auto& t = outputs[r];
          t.copy_(out.narrow(0, static_cast<std::int64_t>(rd[r]), t.numel()).view(t.sizes()));
        }
      });
}

// Point-to-point outside a coalescing region stays blocking: a send may wait for its receiver, and torch programs
// post sends and receives in orders that a single queue per communicator could deadlock. Inside one (what
// batch_isend_irecv opens) they are collected and go out together at endCoalescing, as one braid group.
c10::intrusive_ptr<c10d::Work> BraidBackend::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  requireOne(tensors, "send");
  if (coalesced_) return coalesce(OpType::SEND, tensors[0], dstRank, tag);
  auto t = std::make_shared<Dense>(tensors[0]);
  return launch(OpType::SEND, tensors[0], tensors, t->tensors(), std::chrono::milliseconds(0),
                [&](bool, const braid::CallOptions& o) -> Works {
                  communicator().send(t->data(), t->count(), t->type(), dstRank, tag, o);
                  return {};
                });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  requireOne(tensors, "recv");
  if (coalesced_) return coalesce(OpType::RECV, tensors[0], srcRank, tag);
  auto t = std::make_shared<Dense>(tensors[0]);
  return launch(
      OpType::RECV, tensors[0], tensors, t->tensors(), std::chrono::milliseconds(0),
      [&](bool, const braid::CallOptions& o) -> Works {
        communicator().recv(t->data(), t->count(), t->type(), srcRank, tag, o);
        return {};
      },
      [t] { t->finish(); });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::barrier(const c10d::BarrierOptions& opts) {
  return launch(OpType::BARRIER, at::Tensor(), {}, {}, opts.timeout,
                [&](bool async, const braid::CallOptions& o) -> Works {
                  if (async) return {communicator().barrierAsync(o)};
                  communicator().barrier(o);
                  return {};
                });
}

}  // namespace braid_torch
