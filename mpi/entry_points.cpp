// The MPI collectives the interposer defines: host-only calls go to PMPI_ unchanged, the others to
// collectives.cpp, blocking (the device work finished on return) or non-blocking (a request MPI_Wait/Test finish).
#include <mpi.h>

#include <functional>

#include "collectives.hpp"
#include "requests.hpp"
#include "support.hpp"

namespace {

using braid::mpi::commRank;
using braid::mpi::guarded;
using braid::mpi::onGpu;

bool isRoot(int root, MPI_Comm comm) { return commRank(comm) == root; }

// A non-blocking collective on GPU buffers: queued (or, staged, already done), then a request for it.
int started(MPI_Comm comm, const char* call, MPI_Request* request, const std::function<void()>& queue) {
  return guarded(comm, call, [&] {
    queue();
    *request = braid::mpi::gpuWorkRequest();
  });
}

}  // namespace

namespace mpi = braid::mpi;

extern "C" {

/// Present in a process that loaded the interposer (tests and tools look for it).
int braid_mpi_interposer_version = 1;

/// Open MPI's (and MVAPICH2's) run-time question "may I pass GPU buffers?": applications and frameworks that ask it
/// before they hand MPI device pointers get yes, as from a CUDA-aware build. MPICH's equivalent is
/// MPIX_GPU_query_support.
int MPIX_Query_cuda_support(void) { return 1; }

int MPI_Allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Allreduce(s, r, n, t, op, c);
  return guarded(c, "MPI_Allreduce", [&] { mpi::allreduce(s, r, n, t, op, c, true); });
}
int MPI_Iallreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request* q) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Iallreduce(s, r, n, t, op, c, q);
  return started(c, "MPI_Iallreduce", q, [&] { mpi::allreduce(s, r, n, t, op, c, false); });
}

int MPI_Reduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  if (!onGpu(s) && !(isRoot(root, c) && onGpu(r))) return PMPI_Reduce(s, r, n, t, op, root, c);
  return guarded(c, "MPI_Reduce", [&] { mpi::reduce(s, r, n, t, op, root, c, true); });
}
int MPI_Ireduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c, MPI_Request* q) {
  if (!onGpu(s) && !(isRoot(root, c) && onGpu(r))) return PMPI_Ireduce(s, r, n, t, op, root, c, q);
  return started(c, "MPI_Ireduce", q, [&] { mpi::reduce(s, r, n, t, op, root, c, false); });
}

int MPI_Bcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c) {
  if (!onGpu(b)) return PMPI_Bcast(b, n, t, root, c);
  return guarded(c, "MPI_Bcast", [&] { mpi::bcast(b, n, t, root, c, true); });
}
int MPI_Ibcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request* q) {
  if (!onGpu(b)) return PMPI_Ibcast(b, n, t, root, c, q);
  return started(c, "MPI_Ibcast", q, [&] { mpi::bcast(b, n, t, root, c, false); });
}

int MPI_Allgather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, MPI_Comm c) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Allgather(s, sn, st, r, rn, rt, c);
  return guarded(c, "MPI_Allgather", [&] { mpi::allgather(s, sn, st, r, rn, rt, c, true); });
}
int MPI_Iallgather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, MPI_Comm c,
                   MPI_Request* q) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Iallgather(s, sn, st, r, rn, rt, c, q);
  return started(c, "MPI_Iallgather", q, [&] { mpi::allgather(s, sn, st, r, rn, rt, c, false); });
}

int MPI_Allgatherv(const void* s, int sn, MPI_Datatype st, void* r, const int rn[], const int d[], MPI_Datatype rt,
                   MPI_Comm c) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Allgatherv(s, sn, st, r, rn, d, rt, c);
  return guarded(c, "MPI_Allgatherv", [&] { mpi::allgatherv(s, sn, st, r, rn, d, rt, c, true); });
}
int MPI_Iallgatherv(const void* s, int sn, MPI_Datatype st, void* r, const int rn[], const int d[], MPI_Datatype rt,
                    MPI_Comm c, MPI_Request* q) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Iallgatherv(s, sn, st, r, rn, d, rt, c, q);
  return started(c, "MPI_Iallgatherv", q, [&] { mpi::allgatherv(s, sn, st, r, rn, d, rt, c, false); });
}

int MPI_Gather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, int root, MPI_Comm c) {
  if (!onGpu(s) && !(isRoot(root, c) && onGpu(r))) return PMPI_Gather(s, sn, st, r, rn, rt, root, c);
  return guarded(c, "MPI_Gather", [&] { mpi::gather(s, sn, st, r, rn, rt, root, c, true); });
}
int MPI_Igather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, int root, MPI_Comm c,
                MPI_Request* q) {
  if (!onGpu(s) && !(isRoot(root, c) && onGpu(r))) return PMPI_Igather(s, sn, st, r, rn, rt, root, c, q);
  return started(c, "MPI_Igather", q, [&] { mpi::gather(s, sn, st, r, rn, rt, root, c, false); });
}

int MPI_Gatherv(const void* s, int sn, MPI_Datatype st, void* r, const int rn[], const int d[], MPI_Datatype rt,
                int root, MPI_Comm c) {
  if (!onGpu(s) && !(isRoot(root, c) && onGpu(r))) return PMPI_Gatherv(s, sn, st, r, rn, d, rt, root, c);
  return guarded(c, "MPI_Gatherv", [&] { mpi::gatherv(s, sn, st, r, rn, d, rt, root, c); });
}

int MPI_Scatter(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, int root, MPI_Comm c) {
  if (!(isRoot(root, c) && onGpu(s)) && !onGpu(r)) return PMPI_Scatter(s, sn, st, r, rn, rt, root, c);
  return guarded(c, "MPI_Scatter", [&] { mpi::scatter(s, sn, st, r, rn, rt, root, c, true); });
}
int MPI_Iscatter(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, int root, MPI_Comm c,
                 MPI_Request* q) {
  if (!(isRoot(root, c) && onGpu(s)) && !onGpu(r)) return PMPI_Iscatter(s, sn, st, r, rn, rt, root, c, q);
  return started(c, "MPI_Iscatter", q, [&] { mpi::scatter(s, sn, st, r, rn, rt, root, c, false); });
}

int MPI_Scatterv(const void* s, const int sn[], const int d[], MPI_Datatype st, void* r, int rn, MPI_Datatype rt,
                 int root, MPI_Comm c) {
  if (!(isRoot(root, c) && onGpu(s)) && !onGpu(r)) return PMPI_Scatterv(s, sn, d, st, r, rn, rt, root, c);
  return guarded(c, "MPI_Scatterv", [&] { mpi::scatterv(s, sn, d, st, r, rn, rt, root, c); });
}

int MPI_Alltoall(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, MPI_Comm c) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Alltoall(s, sn, st, r, rn, rt, c);
  return guarded(c, "MPI_Alltoall", [&] { mpi::alltoall(s, sn, st, r, rn, rt, c, true); });
}
int MPI_Ialltoall(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, MPI_Comm c,
                  MPI_Request* q) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Ialltoall(s, sn, st, r, rn, rt, c, q);
  return started(c, "MPI_Ialltoall", q, [&] { mpi::alltoall(s, sn, st, r, rn, rt, c, false); });
}

int MPI_Alltoallv(const void* s, const int sn[], const int sd[], MPI_Datatype st, void* r, const int rn[],
                  const int rd[], MPI_Datatype rt, MPI_Comm c) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Alltoallv(s, sn, sd, st, r, rn, rd, rt, c);
  return guarded(c, "MPI_Alltoallv", [&] { mpi::alltoallv(s, sn, sd, st, r, rn, rd, rt, c, true); });
}
int MPI_Ialltoallv(const void* s, const int sn[], const int sd[], MPI_Datatype st, void* r, const int rn[],
                   const int rd[], MPI_Datatype rt, MPI_Comm c, MPI_Request* q) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Ialltoallv(s, sn, sd, st, r, rn, rd, rt, c, q);
  return started(c, "MPI_Ialltoallv", q, [&] { mpi::alltoallv(s, sn, sd, st, r, rn, rd, rt, c, false); });
}

int MPI_Reduce_scatter_block(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Reduce_scatter_block(s, r, n, t, op, c);
  return guarded(c, "MPI_Reduce_scatter_block", [&] { mpi::reduceScatterBlock(s, r, n, t, op, c, true); });
}
int MPI_Ireduce_scatter_block(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request* q) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Ireduce_scatter_block(s, r, n, t, op, c, q);
  return started(c, "MPI_Ireduce_scatter_block", q, [&] { mpi::reduceScatterBlock(s, r, n, t, op, c, false); });
}

int MPI_Reduce_scatter(const void* s, void* r, const int n[], MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Reduce_scatter(s, r, n, t, op, c);
  return guarded(c, "MPI_Reduce_scatter", [&] { mpi::reduceScatter(s, r, n, t, op, c, true); });
}
int MPI_Ireduce_scatter(const void* s, void* r, const int n[], MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request* q) {
  if (!onGpu(s) && !onGpu(r)) return PMPI_Ireduce_scatter(s, r, n, t, op, c, q);
  return started(c, "MPI_Ireduce_scatter", q, [&] { mpi::reduceScatter(s, r, n, t, op, c, false); });
}

}  // extern "C"
