// Point-to-point on GPU buffers through the interposer: always through host memory and the MPI's own calls, so a
// GPU buffer on one side meets a host buffer on the other (a CUDA-aware MPI's promise), tags, wildcards and
// matching order stay the MPI's. Correct, not fast: braid's own send/recv serve programs written against braid.
#include <mpi.h>

#include <vector>

#include "requests.hpp"
#include "support.hpp"

using braid::mpi::guarded;
using braid::mpi::HostCopy;
using braid::mpi::onGpu;
using braid::mpi::spanOf;

extern "C" {

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  if (!onGpu(buf)) return PMPI_Send(buf, count, type, dest, tag, comm);
  return guarded(comm, "MPI_Send", [&] {
    HostCopy host(buf, spanOf(type, count));
    braid::mpi::checkMpi(PMPI_Send(host.data(), count, type, dest, tag, comm), "PMPI_Send");
  });
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  if (!onGpu(buf)) return PMPI_Recv(buf, count, type, source, tag, comm, status);
  return guarded(comm, "MPI_Recv", [&] {
    HostCopy host(buf, spanOf(type, count));
    braid::mpi::checkMpi(PMPI_Recv(host.data(), count, type, source, tag, comm, status), "PMPI_Recv");
    host.writeBack();
  });
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  if (!onGpu(sendbuf) && !onGpu(recvbuf)) {
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                         comm, status);
  }
  return guarded(comm, "MPI_Sendrecv", [&] {
    HostCopy send(sendbuf, spanOf(sendtype, sendcount));
    HostCopy recv(recvbuf, spanOf(recvtype, recvcount));
    braid::mpi::checkMpi(PMPI_Sendrecv(send.data(), sendcount, sendtype, dest, sendtag, recv.data(), recvcount,
                                       recvtype, source, recvtag, comm, status),
                         "PMPI_Sendrecv");
    recv.writeBack();
  });
}

int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (!onGpu(buf)) return PMPI_Isend(buf, count, type, dest, tag, comm, request);
  return guarded(comm, "MPI_Isend", [&] {
    HostCopy host(buf, spanOf(type, count));
    braid::mpi::checkMpi(PMPI_Isend(host.data(), count, type, dest, tag, comm, request), "PMPI_Isend");
    braid::mpi::stagedRequest(*request, host.release(), nullptr);
  });
}

int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request) {
  if (!onGpu(buf)) return PMPI_Irecv(buf, count, type, source, tag, comm, request);
  return guarded(comm, "MPI_Irecv", [&] {
    HostCopy host(buf, spanOf(type, count));
    braid::mpi::checkMpi(PMPI_Irecv(host.data(), count, type, source, tag, comm, request), "PMPI_Irecv");
    braid::mpi::stagedRequest(*request, host.release(), buf);
  });
}

}  // extern "C"
