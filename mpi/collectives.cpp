// libbraid_mpi: CUDA-aware collectives for an MPI that has none, through MPI's profiling interface. Loaded before
// libmpi (LD_PRELOAD, or linked first), it defines the MPI_ collectives; a call whose buffers are all host memory
// goes on to the MPI unchanged (PMPI_), a call with GPU (or managed) buffers runs on braid's communicator mirrored
// from the MPI one. Predefined datatypes and ops run on braid's kernels; derived datatypes, other ops and calls
// mixing host with GPU buffers are copied through host memory and handed to the MPI, correctly if slowly. MPI has
// no stream: a GPU-buffer call starts after the work on the legacy default stream, and a blocking one returns with
// its device work finished, as CUDA-aware MPIs promise. Every rank must take the same path: all pass GPU buffers or
// all host buffers, with the same predefined datatype (or all a derived one).
#include "collectives.hpp"

#include <optional>
#include <vector>

#include "braid/braid.hpp"
#include "mirror.hpp"
#include "mpi_types.hpp"
#include "support.hpp"

namespace braid::mpi {

namespace {

void finishIf(bool wait) {
  if (wait) finishGpuWork();
}

// The reduction braid runs for (type, op), when it runs one.
struct Reduction {
  DataType type;
  ReduceKind kind;
};
std::optional<Reduction> reductionOf(MPI_Datatype type, MPI_Op op) {
  const auto t = braidType(type);
  const auto kind = t ? braidOp(op, *t) : std::nullopt;
  if (!kind) return std::nullopt;
  return Reduction{*t, *kind};
}

// braid's type when both sides of a call move the same predefined type the same number of times.
std::optional<DataType> movedType(MPI_Datatype sendtype, int sendcount, MPI_Datatype recvtype, int recvcount) {
  if (sendtype != recvtype || sendcount != recvcount) return std::nullopt;
  return braidType(recvtype);
}

std::vector<std::size_t> sizes(const int* values, int n) {
  std::vector<std::size_t> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::size_t>(values[i]);
  return out;
}

std::byte* blockOf(const void* base, MPI_Datatype type, std::size_t elements) {
  return static_cast<std::byte*>(const_cast<void*>(base)) + elements * spanOf(type, 1);
}

}  // namespace

void allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, bool wait) {
  const auto r = reductionOf(type, op);
  if (r && gpuOnly({sendbuf, recvbuf})) {
    const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    mirrorOf(comm).allreduce(send, recvbuf, static_cast<std::size_t>(count), r->type, r->kind, onDefaultStream());
    return finishIf(wait);
  }
  stagedOnce("MPI_Allreduce");
  const std::size_t bytes = spanOf(type, count);
  HostCopy send(sendbuf, bytes);
  HostCopy recv(recvbuf, bytes);
  checkMpi(PMPI_Allreduce(send.data(), recv.data(), count, type, op, comm), "PMPI_Allreduce");
  recv.writeBack();
}

void reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
            bool wait) {
  const bool isRoot = commRank(comm) == root;
  void* recv = isRoot ? recvbuf : nullptr;
  const auto r = reductionOf(type, op);
  if (r && gpuOnly({sendbuf, recv})) {
    const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    mirrorOf(comm).reduce(send, recv, static_cast<std::size_t>(count), r->type, r->kind, root, onDefaultStream());
    return finishIf(wait);
  }
  stagedOnce("MPI_Reduce");
  const std::size_t bytes = spanOf(type, count);
  HostCopy send(sendbuf, bytes);
  HostCopy staged(recv, bytes);
  checkMpi(PMPI_Reduce(send.data(), staged.data(), count, type, op, root, comm), "PMPI_Reduce");
  staged.writeBack();
}

void bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, bool wait) {
  if (const auto t = braidType(type)) {
    mirrorOf(comm).broadcast(buffer, static_cast<std::size_t>(count), *t, root, onDefaultStream());
    return finishIf(wait);
  }
  stagedOnce("MPI_Bcast");
  HostCopy buf(buffer, spanOf(type, count));
  checkMpi(PMPI_Bcast(buf.data(), count, type, root, comm), "PMPI_Bcast");
  buf.writeBack();
}

void allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, MPI_Comm comm, bool wait) {
  const bool inPlace = sendbuf == MPI_IN_PLACE;
  const auto t = inPlace ? braidType(recvtype) : movedType(sendtype, sendcount, recvtype, recvcount);
  if (t && gpuOnly({sendbuf, recvbuf})) {
    const auto count = static_cast<std::size_t>(recvcount);
    const void* mine = blockOf(recvbuf, recvtype, static_cast<std::size_t>(commRank(comm)) * count);
    mirrorOf(comm).allgather(inPlace ? mine : sendbuf, recvbuf, count, *t, onDefaultStream());
    return finishIf(wait);
  }
  stagedOnce("MPI_Allgather");
  HostCopy send(sendbuf, spanOf(sendtype, sendcount));
  HostCopy recv(recvbuf, spanOf(recvtype, recvcount * commSize(comm)));
  checkMpi(PMPI_Allgather(send.data(), sendcount, sendtype, recv.data(), recvcount, recvtype, comm), "PMPI_Allgather");
  recv.writeBack();
}

void allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                const int* displs, MPI_Datatype recvtype, MPI_Comm comm, bool wait) {
  const int n = commSize(comm);
  const int me = commRank(comm);
  const bool inPlace = sendbuf == MPI_IN_PLACE;
  const auto t = inPlace ? braidType(recvtype) : movedType(sendtype, sendcount, recvtype, recvcounts[me]);
  if (t && gpuOnly({sendbuf, recvbuf})) {
    const void* send = inPlace ? blockOf(recvbuf, recvtype, static_cast<std::size_t>(displs[me])) : sendbuf;
    mirrorOf(comm).allgatherv(send, static_cast<std::size_t>(recvcounts[me]), recvbuf, sizes(recvcounts, n),
                              sizes(displs, n), *t, onDefaultStream());
    return finishIf(wait);
  }
  stagedOnce("MPI_Allgatherv");
  HostCopy send(sendbuf, spanOf(sendtype, sendcount));
  HostCopy recv(recvbuf, spanOf(recvtype, recvcounts, displs, n));
  checkMpi(PMPI_Allgatherv(send.data(), sendcount, sendtype, recv.data(), recvcounts, displs, recvtype, comm),
           "PMPI_Allgatherv");
  recv.writeBack();
}

void gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm, bool wait) {
  const int me = commRank(comm);
  const bool isRoot = me == root;
  const bool inPlace = sendbuf == MPI_IN_PLACE;
  // Every rank decides from its own arguments: the same predefined type and count everywhere takes braid.
  const auto t = inPlace  ? braidType(recvtype)
                 : isRoot ? movedType(sendtype, sendcount, recvtype, recvcount)
                          : braidType(sendtype);
  void* recv = isRoot ? recvbuf : nullptr;
  if (t && gpuOnly({sendbuf, recv})) {
    const auto count = static_cast<std::size_t>(inPlace ? recvcount : sendcount);
    const void* send = inPlace ? blockOf(recvbuf, recvtype, static_cast<std::size_t>(me) * count) : sendbuf;
    mirrorOf(comm).gather(send, recv, count, *t, root, onDefaultStream());
    return finishIf(wait);
  }
  stagedOnce("MPI_Gather");
  HostCopy send(sendbuf, spanOf(sendtype, sendcount));
  HostCopy staged(recv, isRoot ? spanOf(recvtype, recvcount * commSize(comm)) : 0);
  checkMpi(PMPI_Gather(send.data(), sendcount, sendtype, staged.data(), recvcount, recvtype, root, comm),
           "PMPI_Gather");
  staged.writeBack();
}

void gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
             const int* displs, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  // braid has no gatherv: through host memory and the MPI.
  stagedOnce("MPI_Gatherv");
  const bool isRoot = commRank(comm) == root;
  HostCopy send(sendbuf, spanOf(sendtype, sendcount));
  HostCopy recv(isRoot ? recvbuf : nullptr, isRoot ? spanOf(recvtype, recvcounts, displs, commSize(comm)) : 0);
  checkMpi(PMPI_Gatherv(send.data(), sendcount, sendtype, recv.data(), recvcounts, displs, recvtype, root, comm),
           "PMPI_Gatherv");
  recv.writeBack();
}

void scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
             MPI_Datatype recvtype, int root, MPI_Comm comm, bool wait) {
  const int me = commRank(comm);
  const bool isRoot = me == root;
  const bool inPlace = isRoot && recvbuf == MPI_IN_PLACE;
  const auto t = inPlace  ? braidType(sendtype)
                 : isRoot ? movedType(sendtype, sendcount, recvtype, recvcount)
                          : braidType(recvtype);
  const void* send = isRoot ? sendbuf : nullptr;
  if (t && gpuOnly({send, recvbuf})) {
    const auto count = static_cast<std::size_t>(isRoot ? sendcount : recvcount);
    void* recv = inPlace ? blockOf(sendbuf, sendtype, static_cast<std::size_t>(me) * count) : recvbuf;
    mirrorOf(comm).scatter(send, recv, count, *t, root, onDefaultStream());
    return finishIf(wait);
  }
  stagedOnce("MPI_Scatter");
  HostCopy staged(send, isRoot ? spanOf(sendtype, sendcount * commSize(comm)) : 0);
  HostCopy recv(recvbuf, spanOf(recvtype, recvcount));
  checkMpi(PMPI_Scatter(staged.data(), sendcount, sendtype, recv.data(), recvcount, recvtype, root, comm),
           "PMPI_Scatter");
  recv.writeBack();
}

void scatterv(const void* sendbuf, const int* sendcounts, const int* displs, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  // braid has no scatterv: through host memory and the MPI.
  stagedOnce("MPI_Scatterv");
  const bool isRoot = commRank(comm) == root;
  HostCopy send(isRoot ? sendbuf : nullptr, isRoot ? spanOf(sendtype, sendcounts, displs, commSize(comm)) : 0);
  HostCopy recv(recvbuf, spanOf(recvtype, recvcount));
  checkMpi(PMPI_Scatterv(send.data(), sendcounts, displs, sendtype, recv.data(), recvcount, recvtype, root, comm),
           "PMPI_Scatterv");
  recv.writeBack();
}

void alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm, bool wait) {
  const auto t = movedType(sendtype, sendcount, recvtype, recvcount);
  if (t && sendbuf != MPI_IN_PLACE && gpuOnly({sendbuf, recvbuf})) {
    mirrorOf(comm).alltoall(sendbuf, recvbuf, static_cast<std::size_t>(recvcount), *t, onDefaultStream());
    return finishIf(wait);
  }
  stagedOnce("MPI_Alltoall");
  const int n = commSize(comm);
  HostCopy send(sendbuf, spanOf(sendtype, sendcount * n));
  HostCopy recv(recvbuf, spanOf(recvtype, recvcount * n));
  checkMpi(PMPI_Alltoall(send.data(), sendcount, sendtype, recv.data(), recvcount, recvtype, comm), "PMPI_Alltoall");
  recv.writeBack();
}

void alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype, void* recvbuf,
               const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm, bool wait) {
  const int n = commSize(comm);
  const auto t = sendtype == recvtype ? braidType(recvtype) : std::nullopt;
  if (t && sendbuf != MPI_IN_PLACE && gpuOnly({sendbuf, recvbuf})) {
    mirrorOf(comm).alltoallv(sendbuf, sizes(sendcounts, n), sizes(sdispls, n), recvbuf, sizes(recvcounts, n),
                             sizes(rdispls, n), *t, onDefaultStream());
    return finishIf(wait);
  }
  stagedOnce("MPI_Alltoallv");
  const bool inPlace = sendbuf == MPI_IN_PLACE;
  HostCopy send(sendbuf, inPlace ? 0 : spanOf(sendtype, sendcounts, sdispls, n));
  HostCopy recv(recvbuf, spanOf(recvtype, recvcounts, rdispls, n));
  checkMpi(PMPI_Alltoallv(send.data(), sendcounts, sdispls, sendtype, recv.data(), recvcounts, rdispls, recvtype, comm),
           "PMPI_Alltoallv");
  recv.writeBack();
}

void reduceScatterBlock(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                        bool wait) {
  const auto r = reductionOf(type, op);
  // MPI's in-place form keeps the input in recvbuf (every block) and leaves the result at its start; braid's is
  // another layout, so that form goes through the MPI.
  if (r && sendbuf != MPI_IN_PLACE && gpuOnly({sendbuf, recvbuf})) {
    mirrorOf(comm).reduceScatter(sendbuf, recvbuf, static_cast<std::size_t>(recvcount), r->type, r->kind,
                                 onDefaultStream());
    return finishIf(wait);
  }
  stagedOnce("MPI_Reduce_scatter_block");
  const std::size_t all = spanOf(type, recvcount * commSize(comm));
  HostCopy send(sendbuf, all);
  HostCopy recv(recvbuf, sendbuf == MPI_IN_PLACE ? all : spanOf(type, recvcount));
  checkMpi(PMPI_Reduce_scatter_block(send.data(), recv.data(), recvcount, type, op, comm), "PMPI_Reduce_scatter_block");
  recv.writeBack();
}

void reduceScatter(const void* sendbuf, void* recvbuf, const int* recvcounts, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, bool wait) {
  const int n = commSize(comm);
  bool equal = true;
  int total = 0;
  for (int i = 0; i < n; ++i) {
    equal &= recvcounts[i] == recvcounts[0];
    total += recvcounts[i];
  }
  // Equal counts are a reduce_scatter_block; braid has no form with counts that differ.
  if (equal) return reduceScatterBlock(sendbuf, recvbuf, recvcounts[0], type, op, comm, wait);
  stagedOnce("MPI_Reduce_scatter");
  const std::size_t all = spanOf(type, total);
  HostCopy send(sendbuf, all);
  HostCopy recv(recvbuf, sendbuf == MPI_IN_PLACE ? all : spanOf(type, recvcounts[commRank(comm)]));
  checkMpi(PMPI_Reduce_scatter(send.data(), recv.data(), recvcounts, type, op, comm), "PMPI_Reduce_scatter");
  recv.writeBack();
}

}  // namespace braid::mpi
