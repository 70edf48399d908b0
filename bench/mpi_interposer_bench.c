/* The MPI interposer's cost (its bars), measured from an MPI program as users run it:
 *   host:   MPI_Allreduce of host buffers, the MPI alone or with libbraid_mpi.so preloaded (what the interposer
 *           adds per call: classifying the buffers, then PMPI_Allreduce);
 *   device: MPI_Allreduce of GPU buffers through the interposer against braid's own C API in the same process, the
 *           latter both waited for after every call (MPI's completion promise) and queued back to back.
 * Every row is the median of 7 repetitions of a timed loop, in microseconds per call; float32 sums, out of place;
 * results checked (exact small integers). Usage: mpirun -np N [-x LD_PRELOAD=...] braid-bench-mpi-interposer
 * host|device [MAX_BYTES]. */
#include <braid/braid.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static int byDouble(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

typedef void (*call_fn)(void* state);

/* Median over 7 repetitions of `iters` calls, in us per call; every rank starts each repetition together. */
static double timed(call_fn call, void* state, int iters, int wait_gpu) {
  double reps[7];
  for (int i = 0; i < 5; ++i) call(state);
  if (wait_gpu) cudaDeviceSynchronize();
  for (int r = 0; r < 7; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) call(state);
    if (wait_gpu) cudaDeviceSynchronize();
    double mine = (MPI_Wtime() - start) * 1e6 / iters, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    reps[r] = slowest;
  }
  qsort(reps, 7, sizeof reps[0], byDouble);
  return reps[3];
}

struct call_state {
  float* send;
  float* recv;
  size_t count;
  braid_comm_t comm;
};

static void mpi_allreduce(void* p) {
  struct call_state* s = p;
  MPI_Allreduce(s->send, s->recv, (int)s->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
static void braid_waited(void* p) {
  struct call_state* s = p;
  braid_allreduce(s->send, s->recv, s->count, BRAID_FLOAT32, BRAID_SUM, s->comm);
  cudaStreamSynchronize(NULL);
}
static void braid_queued(void* p) {
  struct call_state* s = p;
  braid_allreduce(s->send, s->recv, s->count, BRAID_FLOAT32, BRAID_SUM, s->comm);
}

/* Counts elements of recv that are not the sum over ranks of (i % 7 + rank). */
static long wrong(const struct call_state* s, int device) {
  float* h = malloc(s->count * sizeof(float));
  if (device) cudaMemcpy(h, s->recv, s->count * sizeof(float), cudaMemcpyDeviceToHost);
  else memcpy(h, s->recv, s->count * sizeof(float));
  long bad = 0;
  for (size_t i = 0; i < s->count; ++i) {
    const float want = (float)((i % 7) * size + size * (size - 1) / 2);
    bad += h[i] != want;
  }
  free(h);
  long all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int device = argc > 1 && strcmp(argv[1], "device") == 0;
  const size_t most = argc > 2 ? strtoull(argv[2], NULL, 10) : (device ? (size_t)1 << 30 : 8);
  const int preloaded = dlsym(RTLD_DEFAULT, "braid_mpi_interposer_version") != NULL;
  struct call_state s = {0};
  if (device) {
    int gpus = 1;
    cudaGetDeviceCount(&gpus);
    cudaSetDevice(rank % (gpus > 0 ? gpus : 1));
    braid_unique_id_t id;
    if (rank == 0) braid_get_unique_id(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (braid_comm_init(&s.comm, &id, rank, size) != BRAID_SUCCESS) {
      fprintf(stderr, "braid_comm_init failed\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (rank == 0) {
    printf("# %d ranks, %s buffers, interposer %s; us per call (median of 7)\n", size, device ? "GPU" : "host",
           preloaded ? "preloaded" : "absent");
    printf("%12s %14s %14s %14s %8s\n", "bytes", "MPI_Allreduce", device ? "braid waited" : "-",
           device ? "braid queued" : "-", "wrong");
  }
  for (size_t bytes = 8; bytes <= most; bytes *= 8) {
    s.count = bytes / sizeof(float);
    float* h = malloc(bytes);
    for (size_t i = 0; i < s.count; ++i) h[i] = (float)(i % 7 + rank);
    if (device) {
      cudaMalloc((void**)&s.send, bytes);
      cudaMalloc((void**)&s.recv, bytes);
      cudaMemcpy(s.send, h, bytes, cudaMemcpyHostToDevice);
    } else {
      s.send = malloc(bytes);
      s.recv = malloc(bytes);
      memcpy(s.send, h, bytes);
    }
    const int iters = bytes <= 65536 ? (device ? 2000 : 20000) : bytes <= (1 << 23) ? 200 : 20;
    const double viaMpi = timed(mpi_allreduce, &s, iters, 0);
    long bad = wrong(&s, device);
    double waited = 0, queued = 0;
    if (device) {
      waited = timed(braid_waited, &s, iters, 1);
      queued = timed(braid_queued, &s, iters, 1);
      bad += wrong(&s, device);
    }
    if (rank == 0) printf("%12zu %14.2f %14.2f %14.2f %8ld\n", bytes, viaMpi, waited, queued, bad);
    fflush(stdout);
    if (device) {
      cudaFree(s.send);
      cudaFree(s.recv);
    } else {
      free(s.send);
      free(s.recv);
    }
    free(h);
  }
  if (device) braid_comm_destroy(s.comm);
  MPI_Finalize();
  return 0;
}
