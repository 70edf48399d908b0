// braid::Communicator: the public face. Each collective is described once as a Call (its argument checks and
// its body); the blocking form runs it, the async form queues it.
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "braid/braid.hpp"
#include "core/arguments.hpp"
#include "core/communicator_impl.hpp"
#include "core/memory_kind.hpp"

namespace braid {

using core::checkBuffer;
using core::checkPerRank;
using core::checkRank;
using core::checkRoute;
using core::checkType;
using core::times;
using Sizes = std::vector<std::size_t>;

Communicator::Communicator(std::unique_ptr<core::CommunicatorImpl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->rank(); }
int Communicator::size() const { return impl_->size(); }
std::int64_t Communicator::sequenceNumber() const { return impl_->sequenceNumber(); }
int Communicator::hostCount() const { return impl_->placement().hosts(); }
std::string Communicator::flightRecord() const { return impl_->flightRecord(); }
int Communicator::localRank() const { return impl_->placement().localRank; }
int Communicator::localSize() const { return impl_->placement().localSize; }
int Communicator::hostOf(int rank) const {
  if (rank < 0 || rank >= size()) {
    fail(ErrorCode::kInvalidArgument, {.rank = this->rank(), .op = "hostOf"}, "rank ", rank, " out of range for ",
         size(), " ranks");
  }
  return impl_->placement().hostOf[static_cast<std::size_t>(rank)];
}
std::string Communicator::hostName(int rank) const {
  const auto& names = impl_->placement().hostNames;
  return names[static_cast<std::size_t>(hostOf(rank))];
}
std::string Communicator::transportName(Memory memory) const {
  if (memory == Memory::kHost) return impl_->transportName();
  const host::Engine* device = impl_->deviceEngine();
  return device != nullptr ? device->transportName() : "";
}
std::string Communicator::allreduceAlgorithm(std::size_t bytes, Memory memory) const {
  if (memory == Memory::kHost) return impl_->allreduceAlgorithm(bytes);
  const host::Engine* device = impl_->deviceEngine();
  return device != nullptr ? device->allreduceAlgorithm(bytes) : "";
}
std::string Communicator::linkDescription() { return impl_->linkDescription(); }
void Communicator::abort() { impl_->abort(); }
std::optional<Error> Communicator::asyncError() const { return impl_->asyncError(); }

namespace {

template <typename CheckFn, typename BodyFn>
core::CommunicatorImpl::CallOf<CheckFn, BodyFn> makeCall(const char* op, CheckFn check, BodyFn body,
                                                         bool collective = true, core::CallInfo info = {}) {
  return {op, std::move(check), std::move(body), collective, info};
}

// ---- one builder per collective: what to check, what to run ----

void checkReduction(const ErrorContext& ctx, DataType type, ReduceOp op) {
  checkType(type, ctx);
  checkReduceSupported(type, op, ctx.op);
}

auto allreduceCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type,
                   ReduceOp op) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "allreduce",
      [=](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        checkReduction(ctx, type, op);
        checkBuffer(send, count, type, "send buffer", ctx);
        checkBuffer(recv, count, type, "recv buffer", ctx);
      },
      [=](const host::OpEnv& env) { c->allreduce(route, send, recv, count, type, op, env); }, true,
      {type, count, op.kind, -1});
}

auto reduceCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                int root) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {c->rank() == root ? recv : nullptr, "recv buffer"}});
  return makeCall(
      "reduce",
      [=](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        checkRank(root, c->size(), "root", ctx);
        checkReduction(ctx, type, op);
        checkBuffer(send, count, type, "send buffer", ctx);
        if (c->rank() == root) checkBuffer(recv, count, type, "recv buffer", ctx);
      },
      [=](const host::OpEnv& env) { c->engineFor(route, env).reduce(send, recv, count, type, op, root, env); }, true,
      {type, count, op.kind, root});
}

auto broadcastCall(core::CommunicatorImpl* c, void* buf, std::size_t count, DataType type, int root) {
  const core::Route route = core::routeOf({{buf, "buffer"}});
  return makeCall(
      "broadcast",
      [=](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        checkType(type, ctx);
        checkRank(root, c->size(), "root", ctx);
        checkBuffer(buf, count, type, "buffer", ctx);
      },
      [=](const host::OpEnv& env) { c->engineFor(route, env).broadcast(buf, count, type, root, env); }, true,
      {type, count, ReduceKind::kSum, root});
}

auto allgatherCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "allgather",
      [=](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        checkType(type, ctx);
        checkBuffer(send, count, type, "send buffer", ctx);
        checkBuffer(recv, times(count, c->size(), "recv buffer", ctx), type, "recv buffer", ctx);
      },
      [=](const host::OpEnv& env) { c->engineFor(route, env).allgather(send, recv, count, type, env); }, true,
      {type, count, ReduceKind::kSum, -1});
}

auto allgathervCall(core::CommunicatorImpl* c, const void* send, std::size_t sendCount, void* recv,
                    const Sizes& recvCounts, const Sizes& displs, DataType type) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "allgatherv",
      [=](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        checkType(type, ctx);
        checkPerRank(recvCounts, c->size(), "recvCounts", ctx);
        checkPerRank(displs, c->size(), "displs", ctx);
        if (recvCounts[c->rank()] != sendCount) {
          fail(ErrorCode::kInvalidArgument, ctx, "sendCount ", sendCount, " differs from recvCounts[", c->rank(),
               "] = ", recvCounts[c->rank()]);
        }
        checkBuffer(send, sendCount, type, "send buffer", ctx);
        checkBuffer(recv, core::extentOf(recvCounts, displs, "displs", ctx), type, "recv buffer", ctx);
      },
      [=](const host::OpEnv& env) {
        c->engineFor(route, env).allgatherv(send, sendCount, recv, recvCounts, displs, type, env);
      });
}

auto reduceScatterCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t recvCount, DataType type,
                       ReduceOp op) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "reduce_scatter",
      [=](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        checkReduction(ctx, type, op);
        checkBuffer(send, times(recvCount, c->size(), "send buffer", ctx), type, "send buffer", ctx);
        checkBuffer(recv, recvCount, type, "recv buffer", ctx);
      },
      [=](const host::OpEnv& env) { c->engineFor(route, env).reduceScatter(send, recv, recvCount, type, op, env); },
      true, {type, recvCount, op.kind, -1});
}

auto alltoallCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "alltoall",
      [=](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        checkType(type, ctx);
        const std::size_t total = times(count, c->size(), "buffers", ctx);
        checkBuffer(send, total, type, "send buffer", ctx);
        checkBuffer(recv, total, type, "recv buffer", ctx);
      },
      [=](const host::OpEnv& env) { c->engineFor(route, env).alltoall(send, recv, count, type, env); }, true,
      {type, count, ReduceKind::kSum, -1});
}

auto alltoallvCall(core::CommunicatorImpl* c, const void* send, const Sizes& sendCounts, const Sizes& sendDispls,
                   void* recv, const Sizes& recvCounts, const Sizes& recvDispls, DataType type) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "alltoallv",
      [=](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        checkType(type, ctx);
        checkPerRank(sendCounts, c->size(), "sendCounts", ctx);
        checkPerRank(sendDispls, c->size(), "sendDispls", ctx);
        checkPerRank(recvCounts, c->size(), "recvCounts", ctx);
        checkPerRank(recvDispls, c->size(), "recvDispls", ctx);
        checkBuffer(send, core::extentOf(sendCounts, sendDispls, "sendDispls", ctx), type, "send buffer", ctx);
        checkBuffer(recv, core::extentOf(recvCounts, recvDispls, "recvDispls", ctx), type, "recv buffer", ctx);
        // In place works chunk by chunk only when both sides use one layout.
        if (send == recv && send != nullptr && (sendCounts != recvCounts || sendDispls != recvDispls)) {
          fail(ErrorCode::kInvalidArgument, ctx,
               "in-place alltoallv needs equal send and recv counts and displacements");
        }
      },
      [=](const host::OpEnv& env) {
        c->engineFor(route, env).alltoallv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, env);
      });
}

auto gatherCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type, int root) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {c->rank() == root ? recv : nullptr, "recv buffer"}});
  return makeCall(
      "gather",
      [=](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        checkRank(root, c->size(), "root", ctx);
        checkType(type, ctx);
        checkBuffer(send, count, type, "send buffer", ctx);
        if (c->rank() == root) {
          checkBuffer(recv, times(count, c->size(), "recv buffer", ctx), type, "recv buffer", ctx);
        }
      },
      [=](const host::OpEnv& env) { c->engineFor(route, env).gather(send, recv, count, type, root, env); }, true,
      {type, count, ReduceKind::kSum, root});
}

auto scatterCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type, int root) {
  const core::Route route = core::routeOf({{c->rank() == root ? send : nullptr, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "scatter",
      [=](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        checkRank(root, c->size(), "root", ctx);
        checkType(type, ctx);
        if (c->rank() == root) {
          checkBuffer(send, times(count, c->size(), "send buffer", ctx), type, "send buffer", ctx);
        }
        checkBuffer(recv, count, type, "recv buffer", ctx);
      },
      [=](const host::OpEnv& env) { c->engineFor(route, env).scatter(send, recv, count, type, root, env); }, true,
      {type, count, ReduceKind::kSum, root});
}

auto registerCall(core::CommunicatorImpl* c, void* ptr, std::size_t bytes, std::shared_ptr<std::uint64_t> id) {
  const core::Route route = core::routeOf({{ptr, "buffer"}});
  return makeCall(
      "register_buffer",
      [=](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        if (ptr == nullptr || bytes == 0)
          fail(ErrorCode::kInvalidArgument, ctx, "an empty buffer cannot be registered");
        if (!route.device) {
          fail(ErrorCode::kInvalidArgument, ctx, "only GPU memory can be registered; the buffer is ",
               core::memoryKindName(route.firstKind), " memory");
        }
      },
      [=](const host::OpEnv& env) { *id = c->engineFor(route, env).registerBuffer(ptr, bytes, env); }, true,
      {DataType::kUint8, bytes, ReduceKind::kSum, -1});
}

auto deregisterCall(core::CommunicatorImpl* c, BufferRegistration registration) {
  return makeCall(
      "deregister_buffer",
      [=](const ErrorContext& ctx) {
        if (registration.id != 0 && c->deviceEngine() == nullptr) {
          fail(ErrorCode::kInvalidArgument, ctx, "registration ", registration.id, " is not of this communicator");
        }
      },
      [=](const host::OpEnv& env) {
        if (registration.id != 0) c->deviceEngine()->deregisterBuffer(registration.id, env);
      });
}

auto barrierCall(core::CommunicatorImpl* c) {
  return makeCall(
      "barrier", [](const ErrorContext&) {},
      [=](const host::OpEnv& env) { c->engineFor(core::Route{}, env).barrier(env); });
}

auto groupCall(core::CommunicatorImpl* c, std::shared_ptr<const std::vector<P2pOp>> ops) {
  core::Route route;
  for (const auto& op : *ops) core::addToRoute(route, {op.count > 0 ? op.buffer : nullptr, "a p2p buffer"});
  auto call = makeCall(
      "p2p",
      [c, ops, route](const ErrorContext& ctx) {
        checkRoute(route, ctx);
        for (const auto& op : *ops) {
          checkType(op.type, ctx);
          checkRank(op.peer, c->size(), "peer", ctx);
          checkBuffer(op.buffer, op.count, op.type, op.kind == P2pOp::Kind::kSend ? "send buffer" : "recv buffer", ctx);
        }
      },
      [c, ops, route](const host::OpEnv& env) { c->engineFor(route, env).pointToPoint(*ops, env); },
      /*collective=*/false);
  // Device buffers are staged through host copies made around the whole group: they do not join fed groups.
  if (!route.device) call.p2p = ops;
  return call;
}

}  // namespace

// ---- blocking and async forms ----

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                             CallOptions opts) {
  impl_->run(allreduceCall(impl_.get(), send, recv, count, type, op), opts);
}
Work Communicator::allreduceAsync(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                  CallOptions opts) {
  return impl_->submit(allreduceCall(impl_.get(), send, recv, count, type, op), opts);
}

void Communicator::reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                          CallOptions opts) {
  impl_->run(reduceCall(impl_.get(), send, recv, count, type, op, root), opts);
}
Work Communicator::reduceAsync(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                               CallOptions opts) {
  return impl_->submit(reduceCall(impl_.get(), send, recv, count, type, op, root), opts);
}

void Communicator::broadcast(void* buf, std::size_t count, DataType type, int root, CallOptions opts) {
  impl_->run(broadcastCall(impl_.get(), buf, count, type, root), opts);
}
Work Communicator::broadcastAsync(void* buf, std::size_t count, DataType type, int root, CallOptions opts) {
  return impl_->submit(broadcastCall(impl_.get(), buf, count, type, root), opts);
}

void Communicator::allgather(const void* send, void* recv, std::size_t count, DataType type, CallOptions opts) {
  impl_->run(allgatherCall(impl_.get(), send, recv, count, type), opts);
}
Work Communicator::allgatherAsync(const void* send, void* recv, std::size_t count, DataType type, CallOptions opts) {
  return impl_->submit(allgatherCall(impl_.get(), send, recv, count, type), opts);
}

void Communicator::allgatherv(const void* send, std::size_t sendCount, void* recv, const Sizes& recvCounts,
                              const Sizes& displs, DataType type, CallOptions opts) {
  impl_->run(allgathervCall(impl_.get(), send, sendCount, recv, recvCounts, displs, type), opts);
}
Work Communicator::allgathervAsync(const void* send, std::size_t sendCount, void* recv, const Sizes& recvCounts,
                                   const Sizes& displs, DataType type, CallOptions opts) {
  return impl_->submit(allgathervCall(impl_.get(), send, sendCount, recv, recvCounts, displs, type), opts);
}

void Communicator::reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                                 CallOptions opts) {
  impl_->run(reduceScatterCall(impl_.get(), send, recv, recvCount, type, op), opts);
}
Work Communicator::reduceScatterAsync(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                                      CallOptions opts) {
  return impl_->submit(reduceScatterCall(impl_.get(), send, recv, recvCount, type, op), opts);
}

void Communicator::alltoall(const void* send, void* recv, std::size_t count, DataType type, CallOptions opts) {
  impl_->run(alltoallCall(impl_.get(), send, recv, count, type), opts);
}
Work Communicator::alltoallAsync(const void* send, void* recv, std::size_t count, DataType type, CallOptions opts) {
  return impl_->submit(alltoallCall(impl_.get(), send, recv, count, type), opts);
}

void Communicator::alltoallv(const void* send, const Sizes& sendCounts, const Sizes& sendDispls, void* recv,
                             const Sizes& recvCounts, const Sizes& recvDispls, DataType type, CallOptions opts) {
  impl_->run(alltoallvCall(impl_.get(), send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type), opts);
}
Work Communicator::alltoallvAsync(const void* send, const Sizes& sendCounts, const Sizes& sendDispls, void* recv,
                                  const Sizes& recvCounts, const Sizes& recvDispls, DataType type, CallOptions opts) {
  return impl_->submit(alltoallvCall(impl_.get(), send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type),
                       opts);
}

void Communicator::gather(const void* send, void* recv, std::size_t count, DataType type, int root, CallOptions opts) {
  impl_->run(gatherCall(impl_.get(), send, recv, count, type, root), opts);
}
Work Communicator::gatherAsync(const void* send, void* recv, std::size_t count, DataType type, int root,
                               CallOptions opts) {
  return impl_->submit(gatherCall(impl_.get(), send, recv, count, type, root), opts);
}

void Communicator::scatter(const void* send, void* recv, std::size_t count, DataType type, int root, CallOptions opts) {
  impl_->run(scatterCall(impl_.get(), send, recv, count, type, root), opts);
}
Work Communicator::scatterAsync(const void* send, void* recv, std::size_t count, DataType type, int root,
                                CallOptions opts) {
  return impl_->submit(scatterCall(impl_.get(), send, recv, count, type, root), opts);
}

void Communicator::barrier(CallOptions opts) { impl_->run(barrierCall(impl_.get()), opts); }
BufferRegistration Communicator::registerBuffer(void* ptr, std::size_t bytes, CallOptions opts) {
  auto id = std::make_shared<std::uint64_t>(0);
  impl_->run(registerCall(impl_.get(), ptr, bytes, id), opts);
  return BufferRegistration{*id};
}
void Communicator::deregisterBuffer(BufferRegistration registration, CallOptions opts) {
  impl_->run(deregisterCall(impl_.get(), registration), opts);
}
Work Communicator::barrierAsync(CallOptions opts) { return impl_->submit(barrierCall(impl_.get()), opts); }

void Communicator::send(const void* buf, std::size_t count, DataType type, int peer, int tag, CallOptions opts) {
  group({P2pOp{P2pOp::Kind::kSend, peer, const_cast<void*>(buf), count, type, tag}}, opts);
}

void Communicator::recv(void* buf, std::size_t count, DataType type, int peer, int tag, CallOptions opts) {
  group({P2pOp{P2pOp::Kind::kRecv, peer, buf, count, type, tag}}, opts);
}

void Communicator::group(const std::vector<P2pOp>& ops, CallOptions opts) {
  impl_->run(groupCall(impl_.get(), std::make_shared<const std::vector<P2pOp>>(ops)), opts);
}
Work Communicator::groupAsync(std::vector<P2pOp> ops, CallOptions opts) {
  return impl_->submit(groupCall(impl_.get(), std::make_shared<const std::vector<P2pOp>>(std::move(ops))), opts);
}

Work Communicator::sendAsync(const void* buf, std::size_t count, DataType type, int peer, int tag, CallOptions opts) {
  return groupAsync({P2pOp{P2pOp::Kind::kSend, peer, const_cast<void*>(buf), count, type, tag}}, opts);
}
Work Communicator::recvAsync(void* buf, std::size_t count, DataType type, int peer, int tag, CallOptions opts) {
  return groupAsync({P2pOp{P2pOp::Kind::kRecv, peer, buf, count, type, tag}}, opts);
}

}  // namespace braid
