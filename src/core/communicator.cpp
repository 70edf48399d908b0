// braid::Communicator: the public face. Each call checks its arguments and hands a body to CommunicatorImpl.
#include <algorithm>

#include "base/data_type.hpp"
#include "base/error.hpp"
#include "braid/braid.hpp"
#include "core/arguments.hpp"
#include "core/communicator_impl.hpp"

namespace braid {

using core::checkBuffer;
using core::checkPerRank;
using core::checkRank;
using core::checkType;
using core::times;

Communicator::Communicator(std::unique_ptr<core::CommunicatorImpl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->rank(); }
int Communicator::size() const { return impl_->size(); }
std::int64_t Communicator::sequenceNumber() const { return impl_->sequenceNumber(); }

namespace {

auto reduceCheck(const void* send, const void* recv, std::size_t count, DataType type, ReduceOp op,
                 bool recvNeeded) {
  return [=](const ErrorContext& ctx) {
    checkType(type, ctx);
    checkReduceSupported(type, op, ctx.op);
    checkBuffer(send, count, type, "send buffer", ctx);
    if (recvNeeded) checkBuffer(recv, count, type, "recv buffer", ctx);
  };
}

}  // namespace

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                             CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  c->run("allreduce", opts, reduceCheck(send, recv, count, type, op, true), [=](const host::OpEnv& env) {
    c->collectives().allreduce(send, recv, count, type, op, c->reduceAlgorithm(count * dataTypeSize(type)), env);
  });
}

Work Communicator::allreduceAsync(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                  CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  return c->submit("allreduce", opts, reduceCheck(send, recv, count, type, op, true), [=](const host::OpEnv& env) {
    c->collectives().allreduce(send, recv, count, type, op, c->reduceAlgorithm(count * dataTypeSize(type)), env);
  });
}

void Communicator::reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                          CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  const int me = rank(), n = size();
  c->run(
      "reduce", opts,
      [=](const ErrorContext& ctx) {
        checkRank(root, n, "root", ctx);
        reduceCheck(send, recv, count, type, op, me == root)(ctx);
      },
      [=](const host::OpEnv& env) {
        c->collectives().reduce(send, recv, count, type, op, root, c->reduceAlgorithm(count * dataTypeSize(type)),
                                env);
      });
}

namespace {

auto broadcastCheck(const void* buf, std::size_t count, DataType type, int root, int n) {
  return [=](const ErrorContext& ctx) {
    checkType(type, ctx);
    checkRank(root, n, "root", ctx);
    checkBuffer(buf, count, type, "buffer", ctx);
  };
}

}  // namespace

void Communicator::broadcast(void* buf, std::size_t count, DataType type, int root, CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  c->run("broadcast", opts, broadcastCheck(buf, count, type, root, size()),
         [=](const host::OpEnv& env) { c->collectives().broadcast(buf, count, type, root, env); });
}

Work Communicator::broadcastAsync(void* buf, std::size_t count, DataType type, int root, CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  return c->submit("broadcast", opts, broadcastCheck(buf, count, type, root, size()),
                   [=](const host::OpEnv& env) { c->collectives().broadcast(buf, count, type, root, env); });
}

namespace {

auto gatherLikeCheck(const void* send, std::size_t sendCount, const void* recv, std::size_t recvCount,
                     DataType type, bool recvNeeded) {
  return [=](const ErrorContext& ctx) {
    checkType(type, ctx);
    checkBuffer(send, sendCount, type, "send buffer", ctx);
    if (recvNeeded) checkBuffer(recv, recvCount, type, "recv buffer", ctx);
  };
}

}  // namespace

void Communicator::allgather(const void* send, void* recv, std::size_t count, DataType type, CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  const int n = size();
  c->run(
      "allgather", opts,
      [=](const ErrorContext& ctx) {
        gatherLikeCheck(send, count, recv, times(count, n, "recv buffer", ctx), type, true)(ctx);
      },
      [=](const host::OpEnv& env) { c->collectives().allgather(send, recv, count, type, env); });
}

Work Communicator::allgatherAsync(const void* send, void* recv, std::size_t count, DataType type, CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  const int n = size();
  return c->submit(
      "allgather", opts,
      [=](const ErrorContext& ctx) {
        gatherLikeCheck(send, count, recv, times(count, n, "recv buffer", ctx), type, true)(ctx);
      },
      [=](const host::OpEnv& env) { c->collectives().allgather(send, recv, count, type, env); });
}

void Communicator::allgatherv(const void* send, std::size_t sendCount, void* recv,
                              const std::vector<std::size_t>& recvCounts, const std::vector<std::size_t>& displs,
                              DataType type, CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  const int n = size(), me = rank();
  c->run(
      "allgatherv", opts,
      [=](const ErrorContext& ctx) {
        checkPerRank(recvCounts, n, "recvCounts", ctx);
        checkPerRank(displs, n, "displs", ctx);
        if (recvCounts[me] != sendCount) {
          fail(ErrorCode::kInvalidArgument, ctx, "sendCount ", sendCount, " differs from recvCounts[", me,
               "] = ", recvCounts[me]);
        }
        gatherLikeCheck(send, sendCount, recv, core::extentOf(recvCounts, displs, "displs", ctx), type, true)(ctx);
      },
      [=](const host::OpEnv& env) {
        c->collectives().allgatherv(send, sendCount, recv, recvCounts, displs, type, env);
      });
}

namespace {

auto reduceScatterCheck(const void* send, const void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                        int n) {
  return [=](const ErrorContext& ctx) {
    checkType(type, ctx);
    checkReduceSupported(type, op, ctx.op);
    checkBuffer(send, times(recvCount, n, "send buffer", ctx), type, "send buffer", ctx);
    checkBuffer(recv, recvCount, type, "recv buffer", ctx);
  };
}

}  // namespace

void Communicator::reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                                 CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  c->run("reduce_scatter", opts, reduceScatterCheck(send, recv, recvCount, type, op, size()),
         [=](const host::OpEnv& env) { c->collectives().reduceScatter(send, recv, recvCount, type, op, env); });
}

Work Communicator::reduceScatterAsync(const void* send, void* recv, std::size_t recvCount, DataType type,
                                      ReduceOp op, CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  return c->submit(
      "reduce_scatter", opts, reduceScatterCheck(send, recv, recvCount, type, op, size()),
      [=](const host::OpEnv& env) { c->collectives().reduceScatter(send, recv, recvCount, type, op, env); });
}

void Communicator::alltoall(const void* send, void* recv, std::size_t count, DataType type, CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  const int n = size();
  c->run(
      "alltoall", opts,
      [=](const ErrorContext& ctx) {
        const std::size_t total = times(count, n, "buffers", ctx);
        gatherLikeCheck(send, total, recv, total, type, true)(ctx);
      },
      [=](const host::OpEnv& env) { c->collectives().alltoall(send, recv, count, type, env); });
}

void Communicator::alltoallv(const void* send, const std::vector<std::size_t>& sendCounts,
                             const std::vector<std::size_t>& sendDispls, void* recv,
                             const std::vector<std::size_t>& recvCounts,
                             const std::vector<std::size_t>& recvDispls, DataType type, CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  const int n = size();
  c->run(
      "alltoallv", opts,
      [=](const ErrorContext& ctx) {
        checkType(type, ctx);
        checkPerRank(sendCounts, n, "sendCounts", ctx);
        checkPerRank(sendDispls, n, "sendDispls", ctx);
        checkPerRank(recvCounts, n, "recvCounts", ctx);
        checkPerRank(recvDispls, n, "recvDispls", ctx);
        checkBuffer(send, core::extentOf(sendCounts, sendDispls, "sendDispls", ctx), type, "send buffer", ctx);
        checkBuffer(recv, core::extentOf(recvCounts, recvDispls, "recvDispls", ctx), type, "recv buffer", ctx);
        // In place only works chunk by chunk when both sides use one layout.
        if (send == recv && send != nullptr && (sendCounts != recvCounts || sendDispls != recvDispls)) {
          fail(ErrorCode::kInvalidArgument, ctx,
               "in-place alltoallv needs equal send and recv counts and displacements");
        }
      },
      [=](const host::OpEnv& env) {
        c->collectives().alltoallv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, env);
      });
}

void Communicator::gather(const void* send, void* recv, std::size_t count, DataType type, int root,
                          CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  const int n = size(), me = rank();
  c->run(
      "gather", opts,
      [=](const ErrorContext& ctx) {
        checkRank(root, n, "root", ctx);
        gatherLikeCheck(send, count, recv, times(count, n, "recv buffer", ctx), type, me == root)(ctx);
      },
      [=](const host::OpEnv& env) { c->collectives().gather(send, recv, count, type, root, env); });
}

void Communicator::scatter(const void* send, void* recv, std::size_t count, DataType type, int root,
                           CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  const int n = size(), me = rank();
  c->run(
      "scatter", opts,
      [=](const ErrorContext& ctx) {
        checkRank(root, n, "root", ctx);
        checkType(type, ctx);
        if (me == root) checkBuffer(send, times(count, n, "send buffer", ctx), type, "send buffer", ctx);
        checkBuffer(recv, count, type, "recv buffer", ctx);
      },
      [=](const host::OpEnv& env) { c->collectives().scatter(send, recv, count, type, root, env); });
}

void Communicator::barrier(CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  c->run("barrier", opts, nullptr, [=](const host::OpEnv& env) { c->collectives().barrier(env); });
}

Work Communicator::barrierAsync(CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  return c->submit("barrier", opts, nullptr, [=](const host::OpEnv& env) { c->collectives().barrier(env); });
}

namespace {

auto p2pCheck(const std::vector<P2pOp>& ops, int n) {
  return [ops, n](const ErrorContext& ctx) {
    for (const auto& op : ops) {
      checkType(op.type, ctx);
      checkRank(op.peer, n, "peer", ctx);
      checkBuffer(op.buffer, op.count, op.type, op.kind == P2pOp::Kind::kSend ? "send buffer" : "recv buffer", ctx);
    }
  };
}

}  // namespace

void Communicator::send(const void* buf, std::size_t count, DataType type, int peer, int tag, CallOptions opts) {
  group({P2pOp{P2pOp::Kind::kSend, peer, const_cast<void*>(buf), count, type, tag}}, opts);
}

void Communicator::recv(void* buf, std::size_t count, DataType type, int peer, int tag, CallOptions opts) {
  group({P2pOp{P2pOp::Kind::kRecv, peer, buf, count, type, tag}}, opts);
}

void Communicator::group(const std::vector<P2pOp>& ops, CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  c->run(
      "p2p", opts, p2pCheck(ops, size()), [c, &ops](const host::OpEnv& env) { c->p2p().run(ops, env); },
      /*collective=*/false);
}

Work Communicator::groupAsync(std::vector<P2pOp> ops, CallOptions opts) {
  core::CommunicatorImpl* c = impl_.get();
  auto shared = std::make_shared<std::vector<P2pOp>>(std::move(ops));
  return c->submit(
      "p2p", opts, p2pCheck(*shared, size()), [c, shared](const host::OpEnv& env) { c->p2p().run(*shared, env); },
      /*collective=*/false);
}

}  // namespace braid
