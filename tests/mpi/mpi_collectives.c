/* Every collective the interposer defines, on the buffers a test asks for, printing each result's bytes as hex:
 * run under the MPI alone and under the interposer, the outputs (hashes) must be identical (tests/mpi/compare.sh).
 * Each rank writes its lines to ARGV[2].rankR. argv[1]: "host" (pass-through: the interposer must hand every call to the MPI unchanged) or "device" (GPU
 * buffers: braid's kernels or staging). Inputs are exact in float32 so results do not depend on the order of sums;
 * MPI_FLOAT with MPI_SUM over a few ranks of small integers is exact in any order. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <mpi.h>
#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, device;
static FILE* out; /* this rank's results: mpirun would interleave the ranks' stdout mid-line */

static void* buffer(size_t bytes) {
  void* p = NULL;
  if (device) {
    if (cudaMalloc(&p, bytes) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    cudaMemset(p, 0, bytes);
  } else {
    p = calloc(1, bytes);
  }
  return p;
}
static void put(void* dst, const void* src, size_t bytes) {
  if (device) cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice); else memcpy(dst, src, bytes);
}
static void release(void* p) { if (device) cudaFree(p); else free(p); }

/* Prints rank's view of `bytes` at p (hashed), in rank order. */
static void show(const char* what, const void* p, size_t bytes) {
  unsigned char* h = malloc(bytes ? bytes : 1);
  if (device) cudaMemcpy(h, p, bytes, cudaMemcpyDeviceToHost); else memcpy(h, p, bytes);
  for (int r = 0; r < size; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (r != rank) continue;
    /* The first bytes and an FNV-1a hash of all: short lines, which mpirun forwards whole. */
    unsigned long long hash = 1469598103934665603ULL;
    for (size_t i = 0; i < bytes; ++i) hash = (hash ^ h[i]) * 1099511628211ULL;
    fprintf(out, "%s rank %d: %zu bytes, hash %016llx, first ", what, rank, bytes, hash);
    for (size_t i = 0; i < bytes && i < 16; ++i) fprintf(out, "%02x", h[i]);
    fprintf(out, "\n");
  }
  free(h);
}

static void fill(float* v, int n, int salt) { for (int i = 0; i < n; ++i) v[i] = (float)((i * 7 + salt * 13) % 101); }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  device = argc > 1 && strcmp(argv[1], "device") == 0;
  char path[4096];
  snprintf(path, sizeof path, "%s.rank%d", argc > 2 ? argv[2] : "mpi_collectives", rank);
  out = fopen(path, "w");
  if (out == NULL) { fprintf(stderr, "cannot write %s\n", path); MPI_Abort(MPI_COMM_WORLD, 2); }
  if (device) cudaSetDevice(0);
  if (rank == 0) fprintf(out, "interposer %s\n", dlsym(RTLD_DEFAULT, "braid_mpi_interposer_version") ? "loaded" : "absent");
#if defined(OMPI_HAVE_MPI_EXT_CUDA)
  /* What a CUDA-aware application asks before it passes GPU buffers: yes once the interposer is there. */
  if (rank == 0) fprintf(out, "interposer cuda-aware %d\n", MPIX_Query_cuda_support());
#endif
  const int counts[] = {1, 3, 1000, 65537};
  for (int c = 0; c < 4; ++c) {
    const int n = counts[c];
    const size_t b = (size_t)n * sizeof(float);
    float* in = malloc(b * size);
    /* Room for the v-variants' layouts too: a gap of 2 elements after each rank's block. */
    const size_t room = (size_t)(n + 2) * size * sizeof(float);
    float* send = buffer(room);
    float* recv = buffer(room);
    fill(in, n * size, rank);
    put(send, in, b * size);
    char what[64];
    snprintf(what, sizeof what, "allreduce sum %d", n);
    MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    show(what, recv, b);
    snprintf(what, sizeof what, "allreduce max in place %d", n);
    put(recv, in, b);
    MPI_Allreduce(MPI_IN_PLACE, recv, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    show(what, recv, b);
    snprintf(what, sizeof what, "allreduce land (staged) %d", n);
    int* flags = malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) flags[i] = (i + rank) % 3 != 0;
    put(send, flags, n * sizeof(int));
    MPI_Allreduce(send, recv, n, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    show(what, recv, n * sizeof(int));
    free(flags);
    put(send, in, b * size);
    snprintf(what, sizeof what, "reduce prod to 1 %d", n);
    MPI_Reduce(send, recv, n, MPI_FLOAT, MPI_PROD, 1 % size, MPI_COMM_WORLD);
    if (rank == 1 % size) show(what, recv, b); else show(what, recv, 0);
    snprintf(what, sizeof what, "bcast from last %d", n);
    put(recv, in, b);
    MPI_Bcast(recv, n, MPI_FLOAT, size - 1, MPI_COMM_WORLD);
    show(what, recv, b);
    snprintf(what, sizeof what, "allgather %d", n);
    MPI_Allgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, MPI_COMM_WORLD);
    show(what, recv, b * size);
    snprintf(what, sizeof what, "reduce_scatter_block %d", n);
    MPI_Reduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    show(what, recv, b);
    snprintf(what, sizeof what, "alltoall %d", n);
    MPI_Alltoall(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, MPI_COMM_WORLD);
    show(what, recv, b * size);
    /* Per-rank counts: rank r gets n - r (at least 1) elements, packed with a gap of 2 after each block. */
    int* counts = malloc(size * sizeof(int));
    int* displs = malloc(size * sizeof(int));
    int at = 0;
    for (int r = 0; r < size; ++r) {
      counts[r] = n - r > 0 ? n - r : 1;
      displs[r] = at;
      at += counts[r] + 2;
    }
    snprintf(what, sizeof what, "allgatherv %d", n);
    put(recv, in, b);
    MPI_Allgatherv(send, counts[rank], MPI_FLOAT, recv, counts, displs, MPI_FLOAT, MPI_COMM_WORLD);
    show(what, recv, (size_t)at * sizeof(float));
    snprintf(what, sizeof what, "gather to 0 %d", n);
    MPI_Gather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    show(what, recv, rank == 0 ? b * size : 0);
    snprintf(what, sizeof what, "gatherv to last (staged) %d", n);
    put(recv, in, b);
    MPI_Gatherv(send, counts[rank], MPI_FLOAT, recv, counts, displs, MPI_FLOAT, size - 1, MPI_COMM_WORLD);
    show(what, recv, rank == size - 1 ? (size_t)at * sizeof(float) : 0);
    snprintf(what, sizeof what, "scatter from 0 %d", n);
    MPI_Scatter(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    show(what, recv, b);
    snprintf(what, sizeof what, "scatterv from 0 (staged) %d", n);
    MPI_Scatterv(send, counts, displs, MPI_FLOAT, recv, counts[rank], MPI_FLOAT, 0, MPI_COMM_WORLD);
    show(what, recv, (size_t)counts[rank] * sizeof(float));
    snprintf(what, sizeof what, "alltoallv %d", n);
    {
      int* sc = malloc(size * sizeof(int));
      int* sd = malloc(size * sizeof(int));
      int* rc = malloc(size * sizeof(int));
      int* rd = malloc(size * sizeof(int));
      const int block = n / size > 0 ? n / size : 1;
      for (int r = 0; r < size; ++r) {
        sc[r] = (rank + r) % 2 == 0 ? block : block / 2; /* what rank sends to r; r receives the same */
        sd[r] = r * block;
        rc[r] = (r + rank) % 2 == 0 ? block : block / 2;
        rd[r] = r * block;
      }
      put(recv, in, b * size);
      MPI_Alltoallv(send, sc, sd, MPI_FLOAT, recv, rc, rd, MPI_FLOAT, MPI_COMM_WORLD);
      show(what, recv, (size_t)block * size * sizeof(float));
      free(sc); free(sd); free(rc); free(rd);
    }
    snprintf(what, sizeof what, "reduce_scatter uneven %d", n);
    {
      int* rc = malloc(size * sizeof(int));
      int total = 0;
      for (int r = 0; r < size; ++r) { rc[r] = (n + r) / size; total += rc[r]; }
      if (total <= n * size) {
        MPI_Reduce_scatter(send, recv, rc, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        show(what, recv, (size_t)rc[rank] * sizeof(float));
      }
      free(rc);
    }
    /* Non-blocking collectives, finished by each form of wait. */
    snprintf(what, sizeof what, "iallreduce wait %d", n);
    MPI_Request reqs[3];
    MPI_Iallreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    show(what, recv, b);
    snprintf(what, sizeof what, "ibcast test %d", n);
    put(recv, in, b);
    MPI_Ibcast(recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD, &reqs[0]);
    for (int flag = 0; !flag;) MPI_Test(&reqs[0], &flag, MPI_STATUS_IGNORE);
    show(what, recv, b);
    snprintf(what, sizeof what, "iallgather + ialltoall waitall %d", n);
    float* other = buffer(b * size);
    MPI_Iallgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, MPI_COMM_WORLD, &reqs[0]);
    MPI_Ialltoall(send, n, MPI_FLOAT, other, n, MPI_FLOAT, MPI_COMM_WORLD, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    show(what, recv, b * size);
    show(what, other, b * size);
    snprintf(what, sizeof what, "ireduce_scatter_block waitany %d", n);
    MPI_Ireduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD, &reqs[0]);
    for (int done = 0; done < 1; ++done) {
      int index = -1;
      MPI_Waitany(1, reqs, &index, MPI_STATUS_IGNORE);
    }
    show(what, recv, b);
    /* Point-to-point around a ring: blocking, non-blocking, sendrecv. */
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    snprintf(what, sizeof what, "send/recv ring %d", n);
    if (rank % 2 == 0) {
      MPI_Send(send, n, MPI_FLOAT, right, 7, MPI_COMM_WORLD);
      MPI_Recv(recv, n, MPI_FLOAT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(recv, n, MPI_FLOAT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(send, n, MPI_FLOAT, right, 7, MPI_COMM_WORLD);
    }
    show(what, recv, b);
    snprintf(what, sizeof what, "isend/irecv waitall %d", n);
    MPI_Irecv(recv, n, MPI_FLOAT, left, 8, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(send, n, MPI_FLOAT, right, 8, MPI_COMM_WORLD, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    show(what, recv, b);
    snprintf(what, sizeof what, "irecv testsome %d", n);
    MPI_Irecv(other, n, MPI_FLOAT, right, 9, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(send, n, MPI_FLOAT, left, 9, MPI_COMM_WORLD, &reqs[1]);
    for (int left2 = 2; left2 > 0;) {
      int outcount = 0, indices[2];
      MPI_Testsome(2, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
      if (outcount != MPI_UNDEFINED) left2 -= outcount;
    }
    show(what, other, b);
    snprintf(what, sizeof what, "sendrecv %d", n);
    MPI_Sendrecv(send, n, MPI_FLOAT, right, 10, recv, n, MPI_FLOAT, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    show(what, recv, b);
    release(other);
    free(counts);
    free(displs);
    MPI_Datatype pair;  /* a derived type: staged through host memory */
    MPI_Type_contiguous(2, MPI_FLOAT, &pair);
    MPI_Type_commit(&pair);
    snprintf(what, sizeof what, "bcast derived %d", n);
    put(recv, in, b);
    MPI_Bcast(recv, n / 2, pair, 0, MPI_COMM_WORLD);
    show(what, recv, (size_t)(n / 2) * 2 * sizeof(float));
    MPI_Type_free(&pair);
    release(send);
    release(recv);
    free(in);
  }
  fclose(out);
  MPI_Finalize();
  return 0;
}
