/* Every collective the interposer defines, on the buffers a test asks for, printing each result's bytes as hex:
 * run under the MPI alone and under the interposer, the outputs (hashes) must be identical (tests/mpi/compare.sh).
 * argv[1]: "host" (pass-through: the interposer must hand every call to the MPI unchanged) or "device" (GPU
 * buffers: braid's kernels or staging). Inputs are exact in float32 so results do not depend on the order of sums;
 * MPI_FLOAT with MPI_SUM over a few ranks of small integers is exact in any order. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, device;

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
    printf("%s rank %d: %zu bytes, hash %016llx, first ", what, rank, bytes, hash);
    for (size_t i = 0; i < bytes && i < 16; ++i) printf("%02x", h[i]);
    printf("\n");
    fflush(stdout);
  }
  free(h);
}

static void fill(float* v, int n, int salt) { for (int i = 0; i < n; ++i) v[i] = (float)((i * 7 + salt * 13) % 101); }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  device = argc > 1 && strcmp(argv[1], "device") == 0;
  if (device) cudaSetDevice(0);
  if (rank == 0) printf("interposer %s\n", dlsym(RTLD_DEFAULT, "braid_mpi_interposer_version") ? "loaded" : "absent");
  const int counts[] = {1, 3, 1000, 65537};
  for (int c = 0; c < 4; ++c) {
    const int n = counts[c];
    const size_t b = (size_t)n * sizeof(float);
    float* in = malloc(b * size);
    float* send = buffer(b * size);
    float* recv = buffer(b * size);
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
  MPI_Finalize();
  return 0;
}
