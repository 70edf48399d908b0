#include "braid_backend.hpp"

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <numeric>
#include <string>

#include "torch_store.hpp"

namespace braid_torch {

namespace {

using c10d::OpType;

// A finished op: torch's wait() returns at once and the future already holds the outputs.
class DoneWork final : public c10d::Work {
 public:
  DoneWork(int rank, OpType type, std::vector<at::Tensor> outputs)
      : c10d::Work(rank, type),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
    future_->markCompleted(c10::IValue(std::move(outputs)));
  }
  bool isCompleted() override { return true; }
  bool isSuccess() const override { return true; }
  bool wait(std::chrono::milliseconds /*timeout*/) override { return true; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

c10::intrusive_ptr<c10d::Work> done(int rank, OpType type, std::vector<at::Tensor> outputs) {
  return c10::make_intrusive<DoneWork>(rank, type, std::move(outputs));
}

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

braid::CallOptions BraidBackend::callOptions(std::chrono::milliseconds timeout) const {
  braid::CallOptions o;
  o.timeout = timeout.count() > 0 ? timeout : timeout_;
  return o;
}

c10::intrusive_ptr<c10d::Work> BraidBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                       const c10d::BroadcastOptions& opts) {
  requireOne(tensors, "broadcast");
  Dense t(tensors[0]);
  comm_->broadcast(t.data(), t.count(), t.type(), static_cast<int>(opts.rootRank), callOptions(opts.timeout));
  t.finish();
  return done(rank_, OpType::BROADCAST, tensors);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                       const c10d::AllreduceOptions& opts) {
  const braid::ReduceOp op = reduceOpOf(opts.reduceOp);
  for (auto& tensor : tensors) {
    Dense t(tensor);
    comm_->allreduce(t.data(), t.data(), t.count(), t.type(), op, callOptions(opts.timeout));
    t.finish();
  }
  return done(rank_, OpType::ALLREDUCE, tensors);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                 const c10d::AllreduceCoalescedOptions& opts) {
  c10d::AllreduceOptions one;
  one.reduceOp = opts.reduceOp;
  one.timeout = opts.timeout;
  allreduce(tensors, one);
  return done(rank_, OpType::ALLREDUCE_COALESCED, tensors);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  requireOne(tensors, "reduce");
  Dense t(tensors[0]);
  comm_->reduce(t.data(), t.data(), t.count(), t.type(), reduceOpOf(opts.reduceOp), static_cast<int>(opts.rootRank),
                callOptions(opts.timeout));
  t.finish();
  return done(rank_, OpType::REDUCE, tensors);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                             const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(output.numel() == input.numel() * size_, "braid: allgather_into_tensor: output has ", output.numel(),
              " elements, expected ", input.numel(), " x ", size_, " ranks");
  Dense in(input), out(output);
  comm_->allgather(in.data(), out.data(), in.count(), in.type(), callOptions(opts.timeout));
  out.finish();
  return done(rank_, OpType::_ALLGATHER_BASE, {output});
}

c10::intrusive_ptr<c10d::Work> BraidBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::AllgatherOptions& opts) {
  requireOne(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<std::size_t>(size_),
              "braid: allgather needs one output list of ", size_, " tensors");
  requireSameShape(outputs[0], inputs[0], "allgather");
  at::Tensor flat = at::empty({size_, inputs[0].numel()}, inputs[0].options());
  at::Tensor in = inputs[0];
  _allgather_base(flat, in, opts);
  for (int r = 0; r < size_; ++r) outputs[0][r].copy_(flat[r].view(outputs[0][r].sizes()));
  return done(rank_, OpType::ALLGATHER, outputs[0]);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                             std::vector<at::Tensor>& inputs,
                                                                             const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "braid: allgather_into_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  for (std::size_t i = 0; i < inputs.size(); ++i) _allgather_base(outputs[i], inputs[i], opts);
  return done(rank_, OpType::COALESCED, outputs);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                    std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  requireOne(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  Dense in(inputs[0]);
  at::Tensor flat;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<std::size_t>(size_),
                "braid: gather needs one output list of ", size_, " tensors at the root");
    requireSameShape(outputs[0], inputs[0], "gather");
    flat = at::empty({size_, inputs[0].numel()}, inputs[0].options());
  }
  comm_->gather(in.data(), rank_ == root ? flat.data_ptr() : nullptr, in.count(), in.type(), root,
                callOptions(opts.timeout));
  if (rank_ == root) {
    for (int r = 0; r < size_; ++r) outputs[0][r].copy_(flat[r].view(outputs[0][r].sizes()));
    return done(rank_, OpType::GATHER, outputs[0]);
  }
  return done(rank_, OpType::GATHER, {});
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
  Dense out(outputs[0]);
  comm_->scatter(rank_ == root ? flat.data_ptr() : nullptr, out.data(), out.count(), out.type(), root,
                 callOptions(opts.timeout));
  out.finish();
  return done(rank_, OpType::SCATTER, outputs);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                  const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(input.numel() == output.numel() * size_, "braid: reduce_scatter_tensor: input has ", input.numel(),
              " elements, expected ", output.numel(), " x ", size_, " ranks");
  Dense in(input), out(output);
  comm_->reduceScatter(in.data(), out.data(), out.count(), out.type(), reduceOpOf(opts.reduceOp),
                       callOptions(opts.timeout));
  out.finish();
  return done(rank_, OpType::_REDUCE_SCATTER_BASE, {output});
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
  _reduce_scatter_base(outputs[0], flat, opts);
  return done(rank_, OpType::REDUCE_SCATTER, outputs);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                             std::vector<at::Tensor>& inputs,
                                                                             const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "braid: reduce_scatter_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  for (std::size_t i = 0; i < inputs.size(); ++i) _reduce_scatter_base(outputs[i], inputs[i], opts);
  return done(rank_, OpType::COALESCED, outputs);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                           std::vector<int64_t>& outputSplits,
                                                           std::vector<int64_t>& inputSplits,
                                                           const c10d::AllToAllOptions& opts) {
  Dense in(input), out(output);
  if (outputSplits.empty() && inputSplits.empty()) {
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % size_ == 0,
                "braid: all_to_all_single: ", input.numel(), " input and ", output.numel(),
                " output elements do not split evenly over ", size_, " ranks");
    comm_->alltoall(in.data(), out.data(), in.count() / static_cast<std::size_t>(size_), in.type(),
                    callOptions(opts.timeout));
  } else {
    // Splits count rows of the first dimension; braid counts elements.
    auto counts = [this](const std::vector<int64_t>& splits, const at::Tensor& t, std::vector<std::size_t>& c,
                         std::vector<std::size_t>& d) {
      const std::int64_t rows = t.dim() > 0 ? t.size(0) : 1;
      const std::size_t perRow = rows > 0 ? static_cast<std::size_t>(t.numel() / rows) : 0;
      c.assign(static_cast<std::size_t>(size_), 0);
      d.assign(static_cast<std::size_t>(size_), 0);
      std::size_t at = 0;
      for (int r = 0; r < size_; ++r) {
        const std::size_t n = splits.empty() ? static_cast<std::size_t>(rows / size_) * perRow
                                             : static_cast<std::size_t>(splits[static_cast<std::size_t>(r)]) * perRow;
        c[static_cast<std::size_t>(r)] = n;
        d[static_cast<std::size_t>(r)] = at;
        at += n;
      }
    };
    std::vector<std::size_t> sc, sd, rc, rd;
    counts(inputSplits, input, sc, sd);
    counts(outputSplits, output, rc, rd);
    comm_->alltoallv(in.data(), sc, sd, out.data(), rc, rd, in.type(), callOptions(opts.timeout));
  }
  out.finish();
  return done(rank_, OpType::ALLTOALL_BASE, {output});
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
  comm_->alltoallv(in.data_ptr(), sc, sd, out.data_ptr(), rc, rd, dataTypeOf(in), callOptions(opts.timeout));
  for (int r = 0; r < size_; ++r) {
    const auto& t = outputs[static_cast<std::size_t>(r)];
    t.copy_(out.narrow(0, static_cast<std::int64_t>(rd[static_cast<std::size_t>(r)]), t.numel()).view(t.sizes()));
  }
  return done(rank_, OpType::ALLTOALL, outputs);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  requireOne(tensors, "send");
  Dense t(tensors[0]);
  comm_->send(t.data(), t.count(), t.type(), dstRank, tag, callOptions(std::chrono::milliseconds(0)));
  return done(rank_, OpType::SEND, tensors);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  requireOne(tensors, "recv");
  Dense t(tensors[0]);
  comm_->recv(t.data(), t.count(), t.type(), srcRank, tag, callOptions(std::chrono::milliseconds(0)));
  t.finish();
  return done(rank_, OpType::RECV, tensors);
}

c10::intrusive_ptr<c10d::Work> BraidBackend::barrier(const c10d::BarrierOptions& opts) {
  comm_->barrier(callOptions(opts.timeout));
  return done(rank_, OpType::BARRIER, {});
}

}  // namespace braid_torch
