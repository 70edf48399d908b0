// The collectives of the MPI interposer on calls with GPU buffers. Each runs on braid's communicator mirrored from
// the MPI one where braid can (predefined types and ops, GPU buffers only), queued on the legacy default stream and
// waited for when `wait` (the blocking calls; the non-blocking ones wait in MPI_Wait/Test); otherwise through host
// memory and the MPI's own call, finished when it returns. Arguments are MPI's.
#pragma once

#include <mpi.h>

namespace braid::mpi {

void allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, bool wait);
void reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
            bool wait);
void bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, bool wait);
void allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, MPI_Comm comm, bool wait);
void allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                const int* displs, MPI_Datatype recvtype, MPI_Comm comm, bool wait);
void gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm, bool wait);
void gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
             const int* displs, MPI_Datatype recvtype, int root, MPI_Comm comm);
void scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
             MPI_Datatype recvtype, int root, MPI_Comm comm, bool wait);
void scatterv(const void* sendbuf, const int* sendcounts, const int* displs, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
void alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm, bool wait);
void alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype, void* recvbuf,
               const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm, bool wait);
void reduceScatterBlock(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                        bool wait);
void reduceScatter(const void* sendbuf, void* recvbuf, const int* recvcounts, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, bool wait);

}  // namespace braid::mpi
