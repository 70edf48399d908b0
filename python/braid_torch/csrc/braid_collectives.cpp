// The collectives of the backend. Each describes its braid calls once (async for CPU tensors, stream-ordered for
// CUDA ones) and what must happen after them; launch() in braid_backend.cpp does the rest.
#include <ATen/ATen.h>

#include "braid_backend.hpp"
#include "tensor_buffers.hpp"

namespace braid_torch {

using c10d::OpType;
using Works = std::vector<braid::Work>;

c10::intrusive_ptr<c10d::Work> BraidBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                       const c10d::BroadcastOptions& opts) {
  requireOne(tensors, "broadcast");
  auto t = std::make_shared<Dense>(tensors[0]);
  const int root = static_cast<int>(opts.rootRank);
  return launch(
      OpType::BROADCAST, tensors[0], tensors, t->tensors(), LaunchOptions::of(opts),
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
      OpType::ALLREDUCE, tensors[0], tensors, std::move(keep), LaunchOptions::of(opts),
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
      OpType::REDUCE, tensors[0], tensors, t->tensors(), LaunchOptions::of(opts),
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().reduceAsync(t->data(), t->data(), t->count(), t->type(), op, root, o)};
        communicator().reduce(t->data(), t->data(), t->count(), t->type(), op, root, o);
        return {};
      },
      [t] { t->finish(); });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                             const c10d::AllgatherOptions& opts) {
  requireSameType(output, input, "allgather_into_tensor");
  TORCH_CHECK(output.numel() == input.numel() * size_, "braid: allgather_into_tensor: output has ", output.numel(),
              " elements, expected ", input.numel(), " x ", size_, " ranks");
  auto in = std::make_shared<Dense>(input);
  auto out = std::make_shared<Dense>(output);
  std::vector<at::Tensor> keep = in->tensors();
  for (auto& k : out->tensors()) keep.push_back(k);
  return launch(
      OpType::_ALLGATHER_BASE, input, {output}, std::move(keep), LaunchOptions::of(opts),
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
      OpType::ALLGATHER, inputs[0], list, std::move(keep), LaunchOptions::of(opts),
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().allgatherAsync(in->data(), flat.data_ptr(), in->count(), in->type(), o)};
        communicator().allgather(in->data(), flat.data_ptr(), in->count(), in->type(), o);
        return {};
      },
      [list, flat, n = size_]() mutable {
        for (int r = 0; r < n; ++r) list[r].copy_(flat[r].view(list[r].sizes()));
      });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::launchPairs(OpType type, std::vector<at::Tensor>& inputs,
                                                         std::vector<at::Tensor>& outputs, LaunchOptions options,
                                                         const PairCall& call) {
  std::vector<std::shared_ptr<Dense>> ins, outs;
  std::vector<at::Tensor> keep;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ins.push_back(std::make_shared<Dense>(inputs[i]));
    outs.push_back(std::make_shared<Dense>(outputs[i]));
    for (auto& k : ins.back()->tensors()) keep.push_back(k);
    for (auto& k : outs.back()->tensors()) keep.push_back(k);
  }
  return launch(
      type, inputs[0], outputs, std::move(keep), options,
      [&](bool async, const braid::CallOptions& o) -> Works {
        Works works;
        for (std::size_t i = 0; i < ins.size(); ++i) {
          braid::Work w = call(async, *ins[i], *outs[i], o);
          if (async) works.push_back(std::move(w));
        }
        return works;
      },
      [outs] {
        for (auto& t : outs) t->finish();
      });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                             std::vector<at::Tensor>& inputs,
                                                                             const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size() && !inputs.empty(),
              "braid: allgather_into_tensor_coalesced: ", outputs.size(), " outputs for ", inputs.size(), " inputs");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    requireSameType(outputs[i], inputs[i], "allgather_into_tensor_coalesced");
    TORCH_CHECK(outputs[i].numel() == inputs[i].numel() * size_, "braid: allgather_into_tensor_coalesced: output ", i,
                " has ", outputs[i].numel(), " elements, expected ", inputs[i].numel(), " x ", size_, " ranks");
  }
  return launchPairs(OpType::COALESCED, inputs, outputs, LaunchOptions::of(opts),
                     [this](bool async, Dense& in, Dense& out, const braid::CallOptions& o) {
                       if (async) return communicator().allgatherAsync(in.data(), out.data(), in.count(), in.type(), o);
                       communicator().allgather(in.data(), out.data(), in.count(), in.type(), o);
                       return braid::Work();
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
      OpType::GATHER, inputs[0], list, std::move(keep), LaunchOptions::of(opts),
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
      OpType::SCATTER, outputs[0], outputs, std::move(keep), LaunchOptions::of(opts),
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().scatterAsync(send, out->data(), out->count(), out->type(), root, o)};
        communicator().scatter(send, out->data(), out->count(), out->type(), root, o);
        return {};
      },
      [out] { out->finish(); });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                  const c10d::ReduceScatterOptions& opts) {
  requireSameType(output, input, "reduce_scatter_tensor");
  TORCH_CHECK(input.numel() == output.numel() * size_, "braid: reduce_scatter_tensor: input has ", input.numel(),
              " elements, expected ", output.numel(), " x ", size_, " ranks");
  auto in = std::make_shared<Dense>(input);
  auto out = std::make_shared<Dense>(output);
  const braid::ReduceOp op = reduceOpOf(opts.reduceOp);
  std::vector<at::Tensor> keep = in->tensors();
  for (auto& k : out->tensors()) keep.push_back(k);
  return launch(
      OpType::_REDUCE_SCATTER_BASE, input, {output}, std::move(keep), LaunchOptions::of(opts),
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
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    requireSameType(outputs[i], inputs[i], "reduce_scatter_tensor_coalesced");
    TORCH_CHECK(inputs[i].numel() == outputs[i].numel() * size_, "braid: reduce_scatter_tensor_coalesced: input ", i,
                " has ", inputs[i].numel(), " elements, expected ", outputs[i].numel(), " x ", size_, " ranks");
  }
  const braid::ReduceOp op = reduceOpOf(opts.reduceOp);
  return launchPairs(OpType::COALESCED, inputs, outputs, LaunchOptions::of(opts),
                     [this, op](bool async, Dense& in, Dense& out, const braid::CallOptions& o) {
                       if (async) {
                         return communicator().reduceScatterAsync(in.data(), out.data(), out.count(), out.type(), op,
                                                                  o);
                       }
                       communicator().reduceScatter(in.data(), out.data(), out.count(), out.type(), op, o);
                       return braid::Work();
                     });
}

namespace {

// all_to_all_single's splits count rows of the first dimension, as torch's own backends check them: none (the rows
// divide evenly over the ranks) or one per rank, none negative, summing to the rows. braid counts elements, and
// takes the counts as given: a split past the tensor's end would read or write outside it.
void checkSplits(const std::vector<int64_t>& splits, const at::Tensor& t, int size, const char* which) {
  TORCH_CHECK(t.dim() > 0, "braid: all_to_all_single: the ", which, " tensor has no dimension to split (0-dim)");
  const std::int64_t rows = t.size(0);
  if (splits.empty()) {
    TORCH_CHECK(rows % size == 0, "braid: all_to_all_single: the ", which, " tensor's ", rows,
                " rows do not divide evenly over ", size, " ranks (pass split sizes)");
    return;
  }
  TORCH_CHECK(splits.size() == static_cast<std::size_t>(size), "braid: all_to_all_single: ", splits.size(), " ", which,
              " split sizes for ", size, " ranks");
  std::int64_t sum = 0;
  for (std::size_t r = 0; r < splits.size(); ++r) {
    TORCH_CHECK(splits[r] >= 0, "braid: all_to_all_single: ", which, " split size ", splits[r], " for rank ", r,
                " is negative");
    sum += splits[r];
    TORCH_CHECK(sum <= rows, "braid: all_to_all_single: the ", which, " split sizes add up to more than the ", rows,
                " rows of the ", which, " tensor");
  }
  TORCH_CHECK(sum == rows, "braid: all_to_all_single: the ", which, " split sizes add up to ", sum, ", not the ", rows,
              " rows of the ", which, " tensor");
}

// The splits (checked above) as element counts and offsets.
void splitCounts(const std::vector<int64_t>& splits, const at::Tensor& t, int size, std::vector<std::size_t>& counts,
                 std::vector<std::size_t>& displs) {
  const std::int64_t rows = t.size(0);
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
  requireSameType(output, input, "all_to_all_single");
  checkSplits(inputSplits, input, size_, "input");
  checkSplits(outputSplits, output, size_, "output");
  auto in = std::make_shared<Dense>(input);
  auto out = std::make_shared<Dense>(output);
  std::vector<at::Tensor> keep = in->tensors();
  for (auto& k : out->tensors()) keep.push_back(k);
  const bool even = outputSplits.empty() && inputSplits.empty();
  if (even) {
    TORCH_CHECK(input.numel() == output.numel(), "braid: all_to_all_single: ", input.numel(), " input and ",
                output.numel(), " output elements, where even splits need as many of each");
  }
  std::vector<std::size_t> sc, sd, rc, rd;
  if (!even) {
    splitCounts(inputSplits, input, size_, sc, sd);
    splitCounts(outputSplits, output, size_, rc, rd);
  }
  const std::size_t block = in->count() / static_cast<std::size_t>(size_);
  return launch(
      OpType::ALLTOALL_BASE, input, {output}, std::move(keep), LaunchOptions::of(opts),
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
  for (const auto& t : inputs) requireSameType(t, inputs[0], "all_to_all (every input)");
  for (const auto& t : outputs) requireSameType(t, inputs[0], "all_to_all (every output, against the inputs)");
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
      OpType::ALLTOALL, inputs[0], outputs, {in, out}, LaunchOptions::of(opts),
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

}  // namespace braid_torch
