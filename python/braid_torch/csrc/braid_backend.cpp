// The backend's machinery: construction, launching one op (async on braid's progress thread for CPU tensors,
// stream-ordered for CUDA ones), coalescing, lifecycle, and the point-to-point ops and barrier. The collectives
// are in braid_collectives.cpp.
#include "braid_backend.hpp"

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <atomic>

#include "braid_work.hpp"
#include "tensor_buffers.hpp"
#include "torch_store.hpp"

#if defined(BRAID_TORCH_CUDA_STREAM_HEADER)
#include <c10/cuda/CUDAStream.h>
#endif

namespace braid_torch {

using c10d::OpType;
using Works = std::vector<braid::Work>;

namespace {

// The CUDA stream behind a c10::Stream of a CUDA device. c10::Stream::native_handle() came with torch 2.7; before
// it, setup.py builds this file with c10/cuda's CUDAStream (and the CUDA headers) where the toolkit is there.
// A template, so that the requires-expression is checked where the member may be missing.
template <typename S>
CUstream_st* cudaStreamOf(const S& s) {
#if defined(BRAID_TORCH_CUDA_STREAM_HEADER)
  return c10::cuda::CUDAStream(c10::cuda::CUDAStream::UNCHECKED, s).stream();
#else
  if constexpr (requires { s.native_handle(); }) {
    return static_cast<CUstream_st*>(s.native_handle());
  } else {
    TORCH_CHECK(false, "braid_torch was built against a torch before 2.7 without the CUDA toolkit's headers, so it ",
                "cannot reach CUDA streams: rebuild it where CUDA_HOME holds include/cuda_runtime_api.h");
    return nullptr;
  }
#endif
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

#if BRAID_TORCH_SPLITS
c10::intrusive_ptr<c10d::Backend> BraidBackend::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                      const std::vector<int>& ranks,
                                                      const c10::intrusive_ptr<Options>& opts) {
  const auto me = std::find(ranks.begin(), ranks.end(), rank_);
  if (me == ranks.end()) return nullptr;
  for (const int r : ranks) {
    TORCH_CHECK(r >= 0 && r < size_, "braid: split_group: rank ", r, " is not a rank of the parent group of ", size_);
  }
  const std::chrono::milliseconds timeout = opts ? opts->timeout : timeout_;
  return c10::make_intrusive<BraidBackend>(store, static_cast<int>(me - ranks.begin()), static_cast<int>(ranks.size()),
                                           timeout);
}
#endif

struct BraidBackend::Coalesced {
  std::vector<braid::P2pOp> ops;
  std::vector<at::Tensor> keep;
  std::vector<std::shared_ptr<Dense>> recvs;
  std::vector<at::Tensor> outputs;
  std::vector<c10::intrusive_ptr<BraidWork>> works;
  at::Tensor like;  // the first tensor posted: where the group runs (CPU or a CUDA device)
};

namespace {

// Freeing a communicator joins braid's progress thread, which may be dropping the last reference to a tensor that
// Python owns (an op's Work and tensors die with its completion callback there), and that takes the GIL. torch 2.7
// and later call shutdown() from destroy_process_group with the GIL released; torch 2.6 just drops the backend,
// with the GIL held. Holding it here while joining would leave the two threads waiting for each other for good.
void freeWithoutTheGil(std::unique_ptr<braid::Communicator>& comm) {
  if (comm != nullptr && Py_IsInitialized() != 0 && PyGILState_Check() != 0) {
    const pybind11::gil_scoped_release released;
    comm.reset();
  }
  comm.reset();
}

}  // namespace

BraidBackend::~BraidBackend() { freeWithoutTheGil(comm_); }

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
  freeWithoutTheGil(comm_);
}

c10::Stream BraidBackend::streamOn(c10::Device device) {
  auto found = streams_.find(device.index());
  if (found == streams_.end()) {
    found = streams_
                .emplace(device.index(), c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)
                                             ->getStreamFromGlobalPool(device, /*isHighPriority=*/true))
                .first;
  }
  return found->second;
}

c10::Event& BraidBackend::inputsReadyOn(c10::Device device) {
  auto found = inputsReady_.find(device.index());
  if (found == inputsReady_.end()) found = inputsReady_.try_emplace(device.index(), c10::DeviceType::CUDA).first;
  return found->second;
}

c10::intrusive_ptr<BraidWork> BraidBackend::launch(OpType type, const at::Tensor& like, std::vector<at::Tensor> outputs,
                                                   std::vector<at::Tensor> keep, LaunchOptions options,
                                                   const Issue& issue, std::function<void()> after) {
  braid::CallOptions o;
  o.timeout = options.timeout.count() > 0 ? options.timeout : timeout_;
  std::optional<c10::Device> device;
  // Streams, events and the caching allocator come through c10's device-generic interfaces, so this file needs no
  // CUDA headers.
  if (like.defined() && like.is_cuda()) device = like.device();
  if (device && options.callerWaits) {
    // The caller waits at once (async_op=False): the op goes on the caller's current stream, in order with its
    // inputs and with whatever the caller queues next, so it needs no events, no second stream and no allocator
    // bookkeeping, which cost more host time than a small op's kernel. PyTorch's NCCL backend does the same.
    const c10::Stream current = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(*device);
    o.stream = cudaStreamOf(current);
    issue(false, o);
    if (after) after();
    auto work = c10::make_intrusive<BraidWork>(rank_, type, std::move(outputs), std::move(keep), device);
    work->completeOn(current, /*endEvent=*/false);
    return work;
  }
  if (device) {
    // braid's stream starts after what the caller queued on its current stream (the inputs), runs the op and its
    // last steps (copies into list outputs), and the caller's stream waits for it in Work::wait.
    const c10::impl::DeviceGuardImplInterface* cuda = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
    const c10::Stream side = streamOn(*device);
    inputsReadyOn(*device).record(cuda->getStream(*device));
    inputsReadyOn(*device).block(side);
    o.stream = cudaStreamOf(side);
    {
      const c10::StreamGuard onBraidsStream(side);
      issue(false, o);
      if (after) after();
    }
    // Memory braid's stream still uses must not go to the caller's stream's next allocation: the caching allocator
    // waits for braid's stream before it reuses these blocks.
    for (const auto* tensors : {&outputs, &keep}) {
      for (const at::Tensor& t : *tensors) {
        if (t.defined() && t.is_cuda()) cuda->recordDataPtrOnStream(t.storage().data_ptr(), side);
      }
    }
    auto work = c10::make_intrusive<BraidWork>(rank_, type, std::move(outputs), std::move(keep), device);
    work->completeOn(side, /*endEvent=*/true);
    return work;
  }
  std::size_t bytes = 0;
  for (const at::Tensor& t : outputs) bytes += t.defined() ? t.nbytes() : 0;
  auto work = c10::make_intrusive<BraidWork>(rank_, type, std::move(outputs), std::move(keep), device);
  if (like.defined() && options.callerWaits && bytes <= kInlineBytes) {
    // A small CPU op the caller waits for at once runs on the caller's thread (after whatever is queued: braid keeps
    // issue order), its Work complete when launch returns: a hand-off to the progress thread and back costs more
    // than the op. async_op=True ops always go to the progress thread, so they return before their peers arrive.
    std::exception_ptr error;
    try {
      issue(false, o);
      if (after) after();
    } catch (...) {
      error = std::current_exception();
    }
    work->complete(error);
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

c10::intrusive_ptr<c10d::Work> BraidBackend::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  requireOne(tensors, "send");
  if (coalesced_) return coalesce(OpType::SEND, tensors[0], dstRank, tag);
  auto t = std::make_shared<Dense>(tensors[0]);
  // CPU: queued on the progress thread, so isend returns before the receiver is there; a recv posted while it runs
  // joins it (Communicator::sendAsync), so un-batched isend/irecv patterns complete as with Gloo.
  return launch(OpType::SEND, tensors[0], tensors, t->tensors(), std::chrono::milliseconds(0),
                [&](bool async, const braid::CallOptions& o) -> Works {
                  if (async) return {communicator().sendAsync(t->data(), t->count(), t->type(), dstRank, tag, o)};
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
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) return {communicator().recvAsync(t->data(), t->count(), t->type(), srcRank, tag, o)};
        communicator().recv(t->data(), t->count(), t->type(), srcRank, tag, o);
        return {};
      },
      [t] { t->finish(); });
}

c10::intrusive_ptr<c10d::Work> BraidBackend::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  requireOne(tensors, "recv");
  // A coalesced group's receives name their peers (torch's P2POp does); braid refuses GPU tensors by name.
  TORCH_CHECK(!coalesced_, "braid: a receive from any source cannot join a coalesced group");
  auto t = std::make_shared<Dense>(tensors[0]);
  // The sender: what the blocking form returned, or the async form's Work once it completed.
  auto source = std::make_shared<std::atomic<int>>(-1);
  auto pending = std::make_shared<braid::Work>();
  auto work = launch(
      OpType::RECVANYSOURCE, tensors[0], tensors, t->tensors(), std::chrono::milliseconds(0),
      [&](bool async, const braid::CallOptions& o) -> Works {
        if (async) {
          *pending = communicator().recvAsync(t->data(), t->count(), t->type(), braid::kAnySource, tag, o);
          return {*pending};
        }
        source->store(communicator().recv(t->data(), t->count(), t->type(), braid::kAnySource, tag, o));
        return {};
      },
      [t] { t->finish(); });
  work->setSource([source, pending] { return pending->valid() ? pending->source() : source->load(); });
  return work;
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
