// braid::Communicator: the public face. Each collective is described once as a Call (its argument checks and
// its body); the blocking form runs it, the async form queues it.
#include <algorithm>

#include "base/data_type.hpp"
#include "base/error.hpp"
#include "braid/braid.hpp"
#include "core/arguments.hpp"
#include "core/communicator_impl.hpp"
#include "core/memory_kind.hpp"

namespace braid {

using core::blockAt;
using core::checkBuffer;
using core::checkCount;
using core::checkOverlap;
using core::checkPerRank;
using core::checkRank;
using core::checkRoute;
using core::checkType;
using core::times;
using Sizes = std::vector<std::size_t>;

Communicator::Communicator(std::unique_ptr<core::CommunicatorImpl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

namespace {

template <typename CheckFn, typename BodyFn>
core::CommunicatorImpl::CallOf<CheckFn, BodyFn> makeCall(const char* op, const core::Route& route, CheckFn check,
                                                         BodyFn body, bool collective = true,
                                                         core::CallInfo info = {}) {
  return {
      op, std::move(check), std::move(body), collective, info, nullptr, route.device ? route.firstGpuPointer : nullptr};
}

// ---- one builder per collective: what to check, what to run ----

auto allreduceCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type,
                   ReduceOp op) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "allreduce", route,
      [=](const CallContext& ctx) {
        checkRoute(route, ctx);
        checkReduceSupported(type, op, ctx);
        checkBuffer(send, count, type, "send buffer", ctx);
        checkBuffer(recv, count, type, "recv buffer", ctx);
        const std::size_t bytes = count * dataTypeSize(type);
        checkOverlap(send, bytes, recv, bytes, send == recv, "send == recv", ctx);
      },
      [=](const OpEnv& env) { c->allreduce(route, send, recv, count, type, op, env); }, true,
      {type, count, op.kind, -1});
}

auto reduceCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                int root) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {c->rank() == root ? recv : nullptr, "recv buffer"}});
  return makeCall(
      "reduce", route,
      [=](const CallContext& ctx) {
        checkRoute(route, ctx);
        checkRank(root, c->size(), "root", ctx);
        checkReduceSupported(type, op, ctx);
        checkBuffer(send, count, type, "send buffer", ctx);
        if (c->rank() == root) {
          checkBuffer(recv, count, type, "recv buffer", ctx);
          const std::size_t bytes = count * dataTypeSize(type);
          checkOverlap(send, bytes, recv, bytes, send == recv, "send == recv", ctx);
        }
      },
      [=](const OpEnv& env) { c->engineFor(route, env).reduce(send, recv, count, type, op, root, env); }, true,
      {type, count, op.kind, root});
}

auto broadcastCall(core::CommunicatorImpl* c, void* buf, std::size_t count, DataType type, int root) {
  const core::Route route = core::routeOf({{buf, "buffer"}});
  return makeCall(
      "broadcast", route,
      [=](const CallContext& ctx) {
        checkRoute(route, ctx);
        checkType(type, ctx);
        checkRank(root, c->size(), "root", ctx);
        checkBuffer(buf, count, type, "buffer", ctx);
      },
      [=](const OpEnv& env) { c->engineFor(route, env).broadcast(buf, count, type, root, env); }, true,
      {type, count, ReduceKind::kSum, root});
}

auto allgatherCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "allgather", route,
      [=](const CallContext& ctx) {
        checkRoute(route, ctx);
        checkType(type, ctx);
        checkBuffer(send, count, type, "send buffer", ctx);
        checkBuffer(recv, times(count, c->size(), "recv buffer", ctx), type, "recv buffer", ctx);
        const std::size_t bytes = count * dataTypeSize(type);
        checkOverlap(send, bytes, recv, bytes * static_cast<std::size_t>(c->size()),
                     send == blockAt(recv, static_cast<std::size_t>(c->rank()), bytes), "send == recv + rank * count",
                     ctx);
      },
      [=](const OpEnv& env) { c->engineFor(route, env).allgather(send, recv, count, type, env); }, true,
      {type, count, ReduceKind::kSum, -1});
}

auto allgathervCall(core::CommunicatorImpl* c, const void* send, std::size_t sendCount, void* recv,
                    const Sizes& recvCounts, const Sizes& displs, DataType type) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "allgatherv", route,
      [=](const CallContext& ctx) {
        checkRoute(route, ctx);
        checkType(type, ctx);
        checkPerRank(recvCounts, c->size(), "recvCounts", ctx);
        checkPerRank(displs, c->size(), "displs", ctx);
        if (recvCounts[c->rank()] != sendCount) {
          fail(ErrorCode::kInvalidArgument, ctx, "sendCount ", sendCount, " differs from recvCounts[", c->rank(),
               "] = ", recvCounts[c->rank()]);
        }
        checkBuffer(send, sendCount, type, "send buffer", ctx);
        const std::size_t extent = core::extentOf(recvCounts, displs, "displs", ctx);
        core::checkDisjoint(recvCounts, displs, "displs", ctx);
        checkBuffer(recv, extent, type, "recv buffer", ctx);
        const std::size_t size = dataTypeSize(type);
        checkOverlap(send, sendCount * size, recv, extent * size, send == blockAt(recv, displs[c->rank()], size),
                     "send == recv + displs[rank]", ctx);
      },
      [=](const OpEnv& env) {
        c->engineFor(route, env).allgatherv(send, sendCount, recv, recvCounts, displs, type, env);
      });
}

auto reduceScatterCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t recvCount, DataType type,
                       ReduceOp op) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "reduce_scatter", route,
      [=](const CallContext& ctx) {
        checkRoute(route, ctx);
        checkReduceSupported(type, op, ctx);
        checkBuffer(send, times(recvCount, c->size(), "send buffer", ctx), type, "send buffer", ctx);
        checkBuffer(recv, recvCount, type, "recv buffer", ctx);
        const std::size_t bytes = recvCount * dataTypeSize(type);
        checkOverlap(send, bytes * static_cast<std::size_t>(c->size()), recv, bytes,
                     recv == blockAt(send, static_cast<std::size_t>(c->rank()), bytes),
                     "recv == send + rank * recvCount", ctx);
      },
      [=](const OpEnv& env) { c->engineFor(route, env).reduceScatter(send, recv, recvCount, type, op, env); }, true,
      {type, recvCount, op.kind, -1});
}

auto alltoallCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "alltoall", route,
      [=](const CallContext& ctx) {
        checkRoute(route, ctx);
        checkType(type, ctx);
        const std::size_t total = times(count, c->size(), "buffers", ctx);
        checkBuffer(send, total, type, "send buffer", ctx);
        checkBuffer(recv, total, type, "recv buffer", ctx);
        const std::size_t bytes = total * dataTypeSize(type);
        checkOverlap(send, bytes, recv, bytes, send == recv, "send == recv", ctx);
      },
      [=](const OpEnv& env) { c->engineFor(route, env).alltoall(send, recv, count, type, env); }, true,
      {type, count, ReduceKind::kSum, -1});
}

auto alltoallvCall(core::CommunicatorImpl* c, const void* send, const Sizes& sendCounts, const Sizes& sendDispls,
                   void* recv, const Sizes& recvCounts, const Sizes& recvDispls, DataType type) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "alltoallv", route,
      [=](const CallContext& ctx) {
        checkRoute(route, ctx);
        checkType(type, ctx);
        checkPerRank(sendCounts, c->size(), "sendCounts", ctx);
        checkPerRank(sendDispls, c->size(), "sendDispls", ctx);
        checkPerRank(recvCounts, c->size(), "recvCounts", ctx);
        checkPerRank(recvDispls, c->size(), "recvDispls", ctx);
        const std::size_t sendExtent = core::extentOf(sendCounts, sendDispls, "sendDispls", ctx);
        const std::size_t recvExtent = core::extentOf(recvCounts, recvDispls, "recvDispls", ctx);
        core::checkDisjoint(recvCounts, recvDispls, "recvDispls", ctx);
        checkBuffer(send, sendExtent, type, "send buffer", ctx);
        checkBuffer(recv, recvExtent, type, "recv buffer", ctx);
        const std::size_t size = dataTypeSize(type);
        checkOverlap(send, sendExtent * size, recv, recvExtent * size, send == recv, "send == recv", ctx);
        // In place works chunk by chunk only when both sides use one layout.
        if (send == recv && send != nullptr && (sendCounts != recvCounts || sendDispls != recvDispls)) {
          fail(ErrorCode::kInvalidArgument, ctx,
               "in-place alltoallv needs equal send and recv counts and displacements");
        }
      },
      [=](const OpEnv& env) {
        c->engineFor(route, env).alltoallv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, env);
      });
}

auto gatherCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type, int root) {
  const core::Route route = core::routeOf({{send, "send buffer"}, {c->rank() == root ? recv : nullptr, "recv buffer"}});
  return makeCall(
      "gather", route,
      [=](const CallContext& ctx) {
        checkRoute(route, ctx);
        checkRank(root, c->size(), "root", ctx);
        checkType(type, ctx);
        checkBuffer(send, count, type, "send buffer", ctx);
        const std::size_t total = times(count, c->size(), "recv buffer", ctx);
        checkCount(total, type, "the root's recv buffer", ctx);
        if (c->rank() == root) {
          checkBuffer(recv, total, type, "recv buffer", ctx);
          const std::size_t bytes = count * dataTypeSize(type);
          checkOverlap(send, bytes, recv, bytes * static_cast<std::size_t>(c->size()),
                       send == blockAt(recv, static_cast<std::size_t>(root), bytes), "send == recv + root * count",
                       ctx);
        }
      },
      [=](const OpEnv& env) { c->engineFor(route, env).gather(send, recv, count, type, root, env); }, true,
      {type, count, ReduceKind::kSum, root});
}

auto scatterCall(core::CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type, int root) {
  const core::Route route = core::routeOf({{c->rank() == root ? send : nullptr, "send buffer"}, {recv, "recv buffer"}});
  return makeCall(
      "scatter", route,
      [=](const CallContext& ctx) {
        checkRoute(route, ctx);
        checkRank(root, c->size(), "root", ctx);
        checkType(type, ctx);
        const std::size_t total = times(count, c->size(), "send buffer", ctx);
        checkCount(total, type, "the root's send buffer", ctx);
        if (c->rank() == root) checkBuffer(send, total, type, "send buffer", ctx);
        checkBuffer(recv, count, type, "recv buffer", ctx);
        if (c->rank() == root) {
          const std::size_t bytes = count * dataTypeSize(type);
          checkOverlap(send, bytes * static_cast<std::size_t>(c->size()), recv, bytes,
                       recv == blockAt(send, static_cast<std::size_t>(root), bytes), "recv == send + root * count",
                       ctx);
        }
      },
      [=](const OpEnv& env) { c->engineFor(route, env).scatter(send, recv, count, type, root, env); }, true,
      {type, count, ReduceKind::kSum, root});
}

auto registerCall(core::CommunicatorImpl* c, void* ptr, std::size_t bytes, std::shared_ptr<std::uint64_t> id) {
  const core::Route route = core::routeOf({{ptr, "buffer"}});
  return makeCall(
      "register_buffer", route,
      [=](const CallContext& ctx) {
        checkRoute(route, ctx);
        if (ptr == nullptr || bytes == 0)
          fail(ErrorCode::kInvalidArgument, ctx, "an empty buffer cannot be registered");
        if (!route.device) {
          fail(ErrorCode::kInvalidArgument, ctx, "only GPU memory can be registered; the buffer is ",
               core::memoryKindName(route.firstKind), " memory");
        }
      },
      [=](const OpEnv& env) { *id = c->engineFor(route, env).registerBuffer(ptr, bytes, env); }, true,
      {DataType::kUint8, bytes, ReduceKind::kSum, -1});
}

auto deregisterCall(core::CommunicatorImpl* c, BufferRegistration registration) {
  return makeCall(
      "deregister_buffer", core::Route{},
      [=](const CallContext& ctx) {
        if (registration.id != 0 && c->deviceEngine() == nullptr) {
          fail(ErrorCode::kInvalidArgument, ctx, "registration ", registration.id, " is not of this communicator");
        }
      },
      [=](const OpEnv& env) {
        if (registration.id != 0) c->deviceEngine()->deregisterBuffer(registration.id, env);
      });
}

auto barrierCall(core::CommunicatorImpl* c) {
  return makeCall(
      "barrier", core::Route{}, [](const CallContext&) {},
      [=](const OpEnv& env) { c->engineFor(core::Route{}, env).barrier(env); });
}

auto groupCall(core::CommunicatorImpl* c, std::shared_ptr<const std::vector<P2pOp>> ops) {
  core::Route route;
  for (const auto& op : *ops) core::addToRoute(route, {op.count > 0 ? op.buffer : nullptr, "a p2p buffer"});
  auto call = makeCall(
      "p2p", route,
      [c, ops, route](const CallContext& ctx) {
        checkRoute(route, ctx);
        for (std::size_t i = 0; i < ops->size(); ++i) {
          const P2pOp& op = (*ops)[i];
          if (op.kind != P2pOp::Kind::kSend && op.kind != P2pOp::Kind::kRecv) {
            fail(ErrorCode::kInvalidArgument, ctx, "operation ", i, " of ", ops->size(), ": kind ",
                 static_cast<int>(op.kind), " is neither send nor recv");
          }
          checkType(op.type, ctx);
          if (op.kind == P2pOp::Kind::kRecv && op.peer == kAnySource) {
            // Its sender is known only once a message arrives: no device engine could have posted it.
            if (route.device) {
              fail(ErrorCode::kInvalidArgument, ctx, "operation ", i, " of ", ops->size(),
                   ": a receive from any source (kAnySource) takes host buffers, and this group has a GPU buffer");
            }
          } else {
            checkRank(op.peer, c->size(), "peer", ctx);
          }
          checkBuffer(op.buffer, op.count, op.type, op.kind == P2pOp::Kind::kSend ? "send buffer" : "recv buffer", ctx);
        }
      },
      [c, ops, route](const OpEnv& env) { c->engineFor(route, env).pointToPoint(*ops, env); },
      /*collective=*/false);
  // Device buffers are staged through host copies made around the whole group: they do not join fed groups.
  if (!route.device) call.p2p = ops;
  return call;
}

}  // namespace

// ---- plans: a call, the device ranges it reads and writes, and the same call on other pointers ----

namespace {

using core::CommunicatorImpl;
using Extents = std::vector<DeviceExtent>;
using Copies = std::span<void* const>;

// What the blocking and async forms run, or detach where the caller asked (CallOptions::streamAsync). `extents` and
// `onCopies` are only called for a detached call: the plain path builds nothing more than the call.
template <typename CallT, typename ExtentsFn, typename OnCopiesFn>
struct Plan {
  CallT call;
  ExtentsFn extents;
  OnCopiesFn onCopies;
};
template <typename CallT, typename ExtentsFn, typename OnCopiesFn>
Plan<CallT, ExtentsFn, OnCopiesFn> plan(CallT call, ExtentsFn extents, OnCopiesFn onCopies) {
  return {std::move(call), std::move(extents), std::move(onCopies)};
}

template <typename P>
std::shared_ptr<core::WorkState> detached(CommunicatorImpl* c, P& p, const CallOptions& opts) {
  if (!opts.streamAsync || p.call.gpu == nullptr) return nullptr;
  CommunicatorImpl::OnCopies onCopies = [build = p.onCopies](Copies copies) {
    auto k = build(copies);
    return CommunicatorImpl::Call{k.op, std::move(k.check), std::move(k.body), k.collective, k.info, k.p2p, k.gpu};
  };
  return c->detach(p.call, p.extents, onCopies, opts);
}

// A call that cannot detach is made by its call builder alone: building the plan's extents and copies (most of them
// never read) cost a blocking call on host buffers a seventh of its time.
template <typename CallFn, typename PlanFn, typename... Args>
void runPlan(CommunicatorImpl* c, const CallOptions& opts, CallFn call, PlanFn plan, const Args&... args) {
  if (!opts.streamAsync) return c->run(call(c, args...), opts);
  auto p = plan(c, args...);
  if (detached(c, p, opts)) return;
  c->run(std::move(p.call), opts);
}

template <typename CallFn, typename PlanFn, typename... Args>
Work submitPlan(CommunicatorImpl* c, const CallOptions& opts, CallFn call, PlanFn plan, const Args&... args) {
  if (!opts.streamAsync) return c->submit(call(c, args...), opts);
  auto p = plan(c, args...);
  if (auto work = detached(c, p, opts)) return Work(std::move(work));
  return c->submit(std::move(p.call), opts);
}

// What a detached call copies in and back: the ranges its engine would stage (algorithms/call_args.hpp).
Extents extentsOf(const CommunicatorImpl* c, const CallArgs& args) {
  return deviceExtentsOf(args, c->rank(), c->size());
}

auto allreducePlan(CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  return plan(
      allreduceCall(c, send, recv, count, type, op),
      [=] { return extentsOf(c, CallArgs::allreduce(send, recv, count, type, op)); },
      [=](Copies p) { return allreduceCall(c, p[0], p[1], count, type, op); });
}

auto reducePlan(CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                int root) {
  return plan(
      reduceCall(c, send, recv, count, type, op, root),
      [=] { return extentsOf(c, CallArgs::reduce(send, recv, count, type, op, root)); },
      [=](Copies p) { return reduceCall(c, p[0], p[1], count, type, op, root); });
}

auto broadcastPlan(CommunicatorImpl* c, void* buf, std::size_t count, DataType type, int root) {
  return plan(
      broadcastCall(c, buf, count, type, root),
      [=] { return extentsOf(c, CallArgs::broadcast(buf, count, type, root)); },
      [=](Copies p) { return broadcastCall(c, p[0], count, type, root); });
}

auto allgatherPlan(CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type) {
  return plan(
      allgatherCall(c, send, recv, count, type),
      [=] { return extentsOf(c, CallArgs::allgather(send, recv, count, type)); },
      [=](Copies p) { return allgatherCall(c, p[0], p[1], count, type); });
}

auto allgathervPlan(CommunicatorImpl* c, const void* send, std::size_t sendCount, void* recv, const Sizes& recvCounts,
                    const Sizes& displs, DataType type) {
  return plan(
      allgathervCall(c, send, sendCount, recv, recvCounts, displs, type),
      // Elements outside every block stay as they were: the output goes in and out whole.
      [=] { return extentsOf(c, CallArgs::allgatherv(send, sendCount, recv, recvCounts, displs, type)); },
      [=](Copies p) { return allgathervCall(c, p[0], sendCount, p[1], recvCounts, displs, type); });
}

auto reduceScatterPlan(CommunicatorImpl* c, const void* send, void* recv, std::size_t recvCount, DataType type,
                       ReduceOp op) {
  return plan(
      reduceScatterCall(c, send, recv, recvCount, type, op),
      [=] { return extentsOf(c, CallArgs::reduceScatter(send, recv, recvCount, type, op)); },
      [=](Copies p) { return reduceScatterCall(c, p[0], p[1], recvCount, type, op); });
}

auto alltoallPlan(CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type) {
  return plan(
      alltoallCall(c, send, recv, count, type),
      [=] { return extentsOf(c, CallArgs::alltoall(send, recv, count, type)); },
      [=](Copies p) { return alltoallCall(c, p[0], p[1], count, type); });
}

auto alltoallvPlan(CommunicatorImpl* c, const void* send, const Sizes& sendCounts, const Sizes& sendDispls, void* recv,
                   const Sizes& recvCounts, const Sizes& recvDispls, DataType type) {
  return plan(
      alltoallvCall(c, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type),
      [=] {
        return extentsOf(c, CallArgs::alltoallv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type));
      },
      [=](Copies p) { return alltoallvCall(c, p[0], sendCounts, sendDispls, p[1], recvCounts, recvDispls, type); });
}

auto gatherPlan(CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type, int root) {
  return plan(
      gatherCall(c, send, recv, count, type, root),
      [=] { return extentsOf(c, CallArgs::gather(send, recv, count, type, root)); },
      [=](Copies p) { return gatherCall(c, p[0], p[1], count, type, root); });
}

auto scatterPlan(CommunicatorImpl* c, const void* send, void* recv, std::size_t count, DataType type, int root) {
  return plan(
      scatterCall(c, send, recv, count, type, root),
      [=] { return extentsOf(c, CallArgs::scatter(send, recv, count, type, root)); },
      [=](Copies p) { return scatterCall(c, p[0], p[1], count, type, root); });
}

auto groupPlan(CommunicatorImpl* c, std::shared_ptr<const std::vector<P2pOp>> ops) {
  return plan(
      groupCall(c, ops), [=] { return extentsOf(c, CallArgs::pointToPoint(*ops)); },
      [=](Copies p) {
        auto onCopies = std::make_shared<std::vector<P2pOp>>(*ops);
        for (std::size_t i = 0; i < onCopies->size(); ++i) (*onCopies)[i].buffer = p[i];
        return groupCall(c, std::move(onCopies));
      });
}

}  // namespace

// ---- blocking and async forms ----

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                             CallOptions opts) {
  runPlan(impl_.get(), opts, allreduceCall, allreducePlan, send, recv, count, type, op);
}
Work Communicator::allreduceAsync(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                  CallOptions opts) {
  return submitPlan(impl_.get(), opts, allreduceCall, allreducePlan, send, recv, count, type, op);
}

void Communicator::reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                          CallOptions opts) {
  runPlan(impl_.get(), opts, reduceCall, reducePlan, send, recv, count, type, op, root);
}
Work Communicator::reduceAsync(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                               CallOptions opts) {
  return submitPlan(impl_.get(), opts, reduceCall, reducePlan, send, recv, count, type, op, root);
}

void Communicator::broadcast(void* buf, std::size_t count, DataType type, int root, CallOptions opts) {
  runPlan(impl_.get(), opts, broadcastCall, broadcastPlan, buf, count, type, root);
}
Work Communicator::broadcastAsync(void* buf, std::size_t count, DataType type, int root, CallOptions opts) {
  return submitPlan(impl_.get(), opts, broadcastCall, broadcastPlan, buf, count, type, root);
}

void Communicator::allgather(const void* send, void* recv, std::size_t count, DataType type, CallOptions opts) {
  runPlan(impl_.get(), opts, allgatherCall, allgatherPlan, send, recv, count, type);
}
Work Communicator::allgatherAsync(const void* send, void* recv, std::size_t count, DataType type, CallOptions opts) {
  return submitPlan(impl_.get(), opts, allgatherCall, allgatherPlan, send, recv, count, type);
}

void Communicator::allgatherv(const void* send, std::size_t sendCount, void* recv, const Sizes& recvCounts,
                              const Sizes& displs, DataType type, CallOptions opts) {
  runPlan(impl_.get(), opts, allgathervCall, allgathervPlan, send, sendCount, recv, recvCounts, displs, type);
}
Work Communicator::allgathervAsync(const void* send, std::size_t sendCount, void* recv, const Sizes& recvCounts,
                                   const Sizes& displs, DataType type, CallOptions opts) {
  return submitPlan(impl_.get(), opts, allgathervCall, allgathervPlan, send, sendCount, recv, recvCounts, displs, type);
}

void Communicator::reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                                 CallOptions opts) {
  runPlan(impl_.get(), opts, reduceScatterCall, reduceScatterPlan, send, recv, recvCount, type, op);
}
Work Communicator::reduceScatterAsync(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                                      CallOptions opts) {
  return submitPlan(impl_.get(), opts, reduceScatterCall, reduceScatterPlan, send, recv, recvCount, type, op);
}

void Communicator::alltoall(const void* send, void* recv, std::size_t count, DataType type, CallOptions opts) {
  runPlan(impl_.get(), opts, alltoallCall, alltoallPlan, send, recv, count, type);
}
Work Communicator::alltoallAsync(const void* send, void* recv, std::size_t count, DataType type, CallOptions opts) {
  return submitPlan(impl_.get(), opts, alltoallCall, alltoallPlan, send, recv, count, type);
}

void Communicator::alltoallv(const void* send, const Sizes& sendCounts, const Sizes& sendDispls, void* recv,
                             const Sizes& recvCounts, const Sizes& recvDispls, DataType type, CallOptions opts) {
  runPlan(impl_.get(), opts, alltoallvCall, alltoallvPlan, send, sendCounts, sendDispls, recv, recvCounts, recvDispls,
          type);
}
Work Communicator::alltoallvAsync(const void* send, const Sizes& sendCounts, const Sizes& sendDispls, void* recv,
                                  const Sizes& recvCounts, const Sizes& recvDispls, DataType type, CallOptions opts) {
  return submitPlan(impl_.get(), opts, alltoallvCall, alltoallvPlan, send, sendCounts, sendDispls, recv, recvCounts,
                    recvDispls, type);
}

void Communicator::gather(const void* send, void* recv, std::size_t count, DataType type, int root, CallOptions opts) {
  runPlan(impl_.get(), opts, gatherCall, gatherPlan, send, recv, count, type, root);
}
Work Communicator::gatherAsync(const void* send, void* recv, std::size_t count, DataType type, int root,
                               CallOptions opts) {
  return submitPlan(impl_.get(), opts, gatherCall, gatherPlan, send, recv, count, type, root);
}

void Communicator::scatter(const void* send, void* recv, std::size_t count, DataType type, int root, CallOptions opts) {
  runPlan(impl_.get(), opts, scatterCall, scatterPlan, send, recv, count, type, root);
}
Work Communicator::scatterAsync(const void* send, void* recv, std::size_t count, DataType type, int root,
                                CallOptions opts) {
  return submitPlan(impl_.get(), opts, scatterCall, scatterPlan, send, recv, count, type, root);
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

int Communicator::recv(void* buf, std::size_t count, DataType type, int peer, int tag, CallOptions opts) {
  int source = peer;
  group({P2pOp{P2pOp::Kind::kRecv, peer, buf, count, type, tag, peer == kAnySource ? &source : nullptr}}, opts);
  return source;
}

void Communicator::group(const std::vector<P2pOp>& ops, CallOptions opts) {
  runPlan(impl_.get(), opts, groupCall, groupPlan, std::make_shared<const std::vector<P2pOp>>(ops));
}
Work Communicator::groupAsync(std::vector<P2pOp> ops, CallOptions opts) {
  return submitPlan(impl_.get(), opts, groupCall, groupPlan,
                    std::make_shared<const std::vector<P2pOp>>(std::move(ops)));
}

Work Communicator::sendAsync(const void* buf, std::size_t count, DataType type, int peer, int tag, CallOptions opts) {
  return groupAsync({P2pOp{P2pOp::Kind::kSend, peer, const_cast<void*>(buf), count, type, tag}}, opts);
}
Work Communicator::recvAsync(void* buf, std::size_t count, DataType type, int peer, int tag, CallOptions opts) {
  // The sender's rank lives beside the operation, as long as the call or the Work needs it.
  struct Receive {
    std::vector<P2pOp> ops;
    int source;
  };
  auto receive = std::make_shared<Receive>(Receive{{}, peer});
  receive->ops.push_back(
      P2pOp{P2pOp::Kind::kRecv, peer, buf, count, type, tag, peer == kAnySource ? &receive->source : nullptr});
  Work work = submitPlan(impl_.get(), opts, groupCall, groupPlan,
                         std::shared_ptr<const std::vector<P2pOp>>(receive, &receive->ops));
  return Work(std::move(work), std::shared_ptr<const int>(receive, &receive->source));
}

}  // namespace braid
