// NCCL's calls and groups on braid: every collective and point-to-point call runs now on the given stream, or is
// deferred to the end of the group this thread is in (group.hpp).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <functional>
#include <string>

#include "entry.hpp"
#include "group.hpp"
#include "types.hpp"

namespace braid::nccl {
namespace {

constexpr unsigned kSimInfoMagic = 0x74685283;

// Runs a call now, or at the group's end when this thread is inside one. `run` is the blocking form, `start` the
// asynchronous one (a group spanning several communicators starts each on its communicator's own thread).
void collective(ncclComm_t comm, cudaStream_t stream, std::function<void(Communicator&, const CallOptions&)> run,
                std::function<Work(Communicator&, const CallOptions&)> start) {
  requireUsable(comm);
  // NCCL's calls return once queued: a call whose host takes part (staged, ranks sharing a GPU) runs apart.
  const CallOptions on{.stream = stream, .streamAsync = true};
  if (grouping()) {
    defer({comm, [run, on](Communicator& c) { run(c, on); }, [start, on](Communicator& c) { return start(c, on); },
           std::nullopt, stream});
    return;
  }
  const Use use(comm);
  run(communicatorOf(comm), on);
}

void pointToPoint(ncclComm_t comm, cudaStream_t stream, P2pOp op) {
  requireUsable(comm);
  if (op.peer < 0 || op.peer >= comm->size) {
    throw Error(ErrorCode::kInvalidArgument,
                "peer " + std::to_string(op.peer) + " is not a rank of " + std::to_string(comm->size));
  }
  if (grouping()) {
    defer({comm, nullptr, nullptr, op, stream});
    return;
  }
  const Use use(comm);
  communicatorOf(comm).group({op}, {.stream = stream, .streamAsync = true});
}

// The root's input of an out-of-place broadcast, copied into its output first (stream-ordered where CUDA is).
void copyForBroadcast(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (dst == src || bytes == 0) return;
  if (stream == nullptr && memoryOf(src) == Memory::kHost && memoryOf(dst) == Memory::kHost) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(ErrorCode::kInvalidArgument,
                std::string("cannot copy the root's input into its output: ") + cudaGetErrorString(e));
  }
}

}  // namespace
}  // namespace braid::nccl

using namespace braid;        // NOLINT: the entry points below are all this file is
using namespace braid::nccl;  // NOLINT

// ---- Collectives and point-to-point.

NCCL_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclAllReduce", [&] {
    const DataType type = dataTypeOf(datatype);
    const ReduceOp rop = reduceOpOf(requireComm(comm), op, stream);
    collective(
        comm, stream,
        [=](Communicator& c, const CallOptions& o) { c.allreduce(sendbuff, recvbuff, count, type, rop, o); },
        [=](Communicator& c, const CallOptions& o) {
          return c.allreduceAsync(sendbuff, recvbuff, count, type, rop, o);
        });
  });
}
NCCL_ALIAS(ncclAllReduce)

NCCL_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclReduce", [&] {
    const DataType type = dataTypeOf(datatype);
    const ReduceOp rop = reduceOpOf(requireComm(comm), op, stream);
    collective(
        comm, stream,
        [=](Communicator& c, const CallOptions& o) { c.reduce(sendbuff, recvbuff, count, type, rop, root, o); },
        [=](Communicator& c, const CallOptions& o) {
          return c.reduceAsync(sendbuff, recvbuff, count, type, rop, root, o);
        });
  });
}
NCCL_ALIAS(ncclReduce)

NCCL_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclBroadcast", [&] {
    const DataType type = dataTypeOf(datatype);
    const std::size_t bytes = count * dataTypeSize(type);
    collective(
        comm, stream,
        [=](Communicator& c, const CallOptions& o) {
          if (c.rank() == root) copyForBroadcast(recvbuff, sendbuff, bytes, stream);
          c.broadcast(recvbuff, count, type, root, o);
        },
        [=](Communicator& c, const CallOptions& o) {
          if (c.rank() == root) copyForBroadcast(recvbuff, sendbuff, bytes, stream);
          return c.broadcastAsync(recvbuff, count, type, root, o);
        });
  });
}
NCCL_ALIAS(ncclBroadcast)

NCCL_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream) {
  return guarded("ncclBcast", [&] {
    const DataType type = dataTypeOf(datatype);
    collective(
        comm, stream, [=](Communicator& c, const CallOptions& o) { c.broadcast(buff, count, type, root, o); },
        [=](Communicator& c, const CallOptions& o) { return c.broadcastAsync(buff, count, type, root, o); });
  });
}
NCCL_ALIAS(ncclBcast)

NCCL_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                       ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclAllGather", [&] {
    const DataType type = dataTypeOf(datatype);
    collective(
        comm, stream,
        [=](Communicator& c, const CallOptions& o) { c.allgather(sendbuff, recvbuff, sendcount, type, o); },
        [=](Communicator& c, const CallOptions& o) {
          return c.allgatherAsync(sendbuff, recvbuff, sendcount, type, o);
        });
  });
}
NCCL_ALIAS(ncclAllGather)

NCCL_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                           cudaStream_t stream) {
  return guarded("ncclReduceScatter", [&] {
    const DataType type = dataTypeOf(datatype);
    const ReduceOp rop = reduceOpOf(requireComm(comm), op, stream);
    collective(
        comm, stream,
        [=](Communicator& c, const CallOptions& o) { c.reduceScatter(sendbuff, recvbuff, recvcount, type, rop, o); },
        [=](Communicator& c, const CallOptions& o) {
          return c.reduceScatterAsync(sendbuff, recvbuff, recvcount, type, rop, o);
        });
  });
}
NCCL_ALIAS(ncclReduceScatter)

NCCL_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclAlltoAll", [&] {
    const DataType type = dataTypeOf(datatype);
    collective(
        comm, stream, [=](Communicator& c, const CallOptions& o) { c.alltoall(sendbuff, recvbuff, count, type, o); },
        [=](Communicator& c, const CallOptions& o) { return c.alltoallAsync(sendbuff, recvbuff, count, type, o); });
  });
}
NCCL_ALIAS(ncclAlltoAll)

NCCL_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    int root, ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclGather", [&] {
    const DataType type = dataTypeOf(datatype);
    collective(
        comm, stream,
        [=](Communicator& c, const CallOptions& o) { c.gather(sendbuff, recvbuff, count, type, root, o); },
        [=](Communicator& c, const CallOptions& o) { return c.gatherAsync(sendbuff, recvbuff, count, type, root, o); });
  });
}
NCCL_ALIAS(ncclGather)

NCCL_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclScatter", [&] {
    const DataType type = dataTypeOf(datatype);
    collective(
        comm, stream,
        [=](Communicator& c, const CallOptions& o) { c.scatter(sendbuff, recvbuff, count, type, root, o); },
        [=](Communicator& c, const CallOptions& o) {
          return c.scatterAsync(sendbuff, recvbuff, count, type, root, o);
        });
  });
}
NCCL_ALIAS(ncclScatter)

NCCL_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                  ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclSend", [&] {
    pointToPoint(comm, stream,
                 P2pOp{P2pOp::Kind::kSend, peer, const_cast<void*>(sendbuff), count, dataTypeOf(datatype), 0});
  });
}
NCCL_ALIAS(ncclSend)

NCCL_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                  cudaStream_t stream) {
  return guarded("ncclRecv", [&] {
    pointToPoint(comm, stream, P2pOp{P2pOp::Kind::kRecv, peer, recvbuff, count, dataTypeOf(datatype), 0});
  });
}
NCCL_ALIAS(ncclRecv)

// ---- Groups.

NCCL_EXPORT ncclResult_t ncclGroupStart() {
  return guarded("ncclGroupStart", [] { groupStart(); });
}
NCCL_ALIAS(ncclGroupStart)

NCCL_EXPORT ncclResult_t ncclGroupEnd() {
  return guarded("ncclGroupEnd", [] {
    if (!grouping()) throw UsageError("no ncclGroupStart to end");
    groupEnd(false);
  });
}
NCCL_ALIAS(ncclGroupEnd)

NCCL_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return guarded("ncclGroupSimulateEnd", [&] {
    if (!grouping()) throw UsageError("no ncclGroupStart to end");
    if (simInfo != nullptr && (simInfo->magic != kSimInfoMagic || simInfo->size < sizeof(ncclSimInfo_t))) {
      throw Error(ErrorCode::kInvalidArgument, "the ncclSimInfo_t was not initialised with NCCL_SIM_INFO_INITIALIZER");
    }
    groupEnd(true);
    // braid does not predict a group's time: the estimate stays undefined, as the initializer left it.
    if (simInfo != nullptr) simInfo->estimatedTime = NCCL_UNDEF_FLOAT;
  });
}
NCCL_ALIAS(ncclGroupSimulateEnd)
