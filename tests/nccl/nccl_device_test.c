/* NCCL's C API on device buffers, written as a program for NCCL is: it runs unchanged against the real libnccl.so.2
 * and against braid's, and every expected value is computed here, so two libraries that pass agree with each other.
 * Inputs are small integers: every sum, product, min, max and two-rank average is exact in every type, float8
 * included, and each result must equal its reference bit for bit; averages of more ranks are held to the type's
 * rounding bound.
 *
 * Usage: nccl_device_test RANKS [--distinct-hosts]
 *   Ranks are processes forked here, rank r on GPU r % GPUs. --distinct-hosts gives every rank its own
 *   NCCL_HOSTID, with NCCL_P2P_DISABLE and NCCL_SHM_DISABLE: the real NCCL then accepts ranks that share a GPU
 *   (it refuses them on one host) and talks over its socket transport; braid takes the host id as its own.
 * Exit status 0 when every rank passed, 2 when there is no GPU; each failure is printed with its rank. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int me = -1;
static int failures = 0;

#include "nccl_checks.h"

#define CUDA(call)                                                                                \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "rank %d: line %d: %s: %s\n", me, __LINE__, #call, cudaGetErrorString(e_)); \
      _exit(1);                                                                                   \
    }                                                                                             \
  } while (0)

/* ---- Element types: the bytes of a value, and a value of the bytes. */

static double halfValue(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
static double bfloat16Value(uint16_t b) {
  const uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
/* fp8: E4M3 (bias 7, no infinities, S.1111.111 is NaN) and E5M2 (bias 15, IEEE-like). */
static double fp8Value(uint8_t x, int expBits) {
  const int manBits = 7 - expBits, bias = (1 << (expBits - 1)) - 1;
  const int e = (x >> manBits) & ((1 << expBits) - 1), m = x & ((1 << manBits) - 1);
  double v;
  if (expBits == 4 && e == 15 && m == 7)
    v = NAN;
  else if (expBits == 5 && e == 31)
    v = m ? NAN : INFINITY;
  else
    v = e == 0 ? ldexp(m, 1 - bias - manBits) : ldexp((1 << manBits) + m, e - bias - manBits);
  return (x & 0x80) ? -v : v;
}

typedef struct {
  ncclDataType_t type;
  const char* name;
  size_t size;
  int isFloat, isSigned;
  int mantissa; /* stored mantissa bits of a float type */
} Type;

static const Type kTypes[] = {
    {ncclInt8, "int8", 1, 0, 1, 0},
    {ncclUint8, "uint8", 1, 0, 0, 0},
    {ncclInt32, "int32", 4, 0, 1, 0},
    {ncclUint32, "uint32", 4, 0, 0, 0},
    {ncclInt64, "int64", 8, 0, 1, 0},
    {ncclUint64, "uint64", 8, 0, 0, 0},
    {ncclFloat16, "float16", 2, 1, 1, 10},
    {ncclFloat32, "float32", 4, 1, 1, 23},
    {ncclFloat64, "float64", 8, 1, 1, 52},
    {ncclBfloat16, "bfloat16", 2, 1, 1, 7},
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    {ncclFloat8e4m3, "float8e4m3", 1, 1, 1, 3},
    {ncclFloat8e5m2, "float8e5m2", 1, 1, 1, 2},
#endif
};
enum { kNumTypes = sizeof kTypes / sizeof kTypes[0] };

static double valueOf(const Type* t, const void* p) {
  switch (t->type) {
    case ncclInt8:
      return *(const int8_t*)p;
    case ncclUint8:
      return *(const uint8_t*)p;
    case ncclInt32:
      return *(const int32_t*)p;
    case ncclUint32:
      return *(const uint32_t*)p;
    case ncclInt64:
      return (double)*(const int64_t*)p;
    case ncclUint64:
      return (double)*(const uint64_t*)p;
    case ncclFloat16:
      return halfValue(*(const uint16_t*)p);
    case ncclFloat32:
      return *(const float*)p;
    case ncclFloat64:
      return *(const double*)p;
    case ncclBfloat16:
      return bfloat16Value(*(const uint16_t*)p);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case ncclFloat8e4m3:
      return fp8Value(*(const uint8_t*)p, 4);
    case ncclFloat8e5m2:
      return fp8Value(*(const uint8_t*)p, 5);
#endif
    default:
      return NAN;
  }
}

/* Writes v, a value the type holds exactly (a small integer here), into p. */
static void store(const Type* t, void* p, double v) {
  switch (t->type) {
    case ncclInt8:
      *(int8_t*)p = (int8_t)v;
      return;
    case ncclUint8:
      *(uint8_t*)p = (uint8_t)v;
      return;
    case ncclInt32:
      *(int32_t*)p = (int32_t)v;
      return;
    case ncclUint32:
      *(uint32_t*)p = (uint32_t)v;
      return;
    case ncclInt64:
      *(int64_t*)p = (int64_t)v;
      return;
    case ncclUint64:
      *(uint64_t*)p = (uint64_t)v;
      return;
    case ncclFloat32:
      *(float*)p = (float)v;
      return;
    case ncclFloat64:
      *(double*)p = v;
      return;
    default:
      break;
  }
  /* 16- and 8-bit floats: the code whose value is v (small integers are exact in all of them), found by a search
   * over the codes through valueOf and remembered: inputs take a handful of values, buffers a million elements. */
  static long found[kNumTypes][16]; /* code + 1 of the values -8..7; 0: not searched yet */
  const int slot = v >= -8 && v < 8 && v == floor(v) ? (int)v + 8 : -1;
  const unsigned codes = t->size == 2 ? 65536u : 256u;
  long code = slot >= 0 ? found[t - kTypes][slot] - 1 : -1;
  for (unsigned c = 0; code < 0 && c < codes; ++c) {
    uint16_t c16 = (uint16_t)c;
    uint8_t c8 = (uint8_t)c;
    if (valueOf(t, t->size == 2 ? (const void*)&c16 : (const void*)&c8) == v && !(v == 0 && (c & (codes >> 1))))
      code = (long)c;
  }
  if (code < 0) {
    fprintf(stderr, "no %s holds %g\n", t->name, v);
    _exit(1);
  }
  if (slot >= 0) found[t - kTypes][slot] = code + 1;
  uint16_t c16 = (uint16_t)code;
  uint8_t c8 = (uint8_t)code;
  if (t->size == 2)
    memcpy(p, &c16, 2);
  else
    memcpy(p, &c8, 1);
}

/* Rank r's element i of input `salt`: -3..3 for signed types, 0..3 for unsigned ones. */
static double input(const Type* t, int r, size_t i, int salt) {
  const long v = (long)((i * 7 + (size_t)r * 3 + (size_t)salt) % 7);
  return t->isSigned ? (double)(v - 3) : (double)(v % 4);
}

static void* deviceFilled(const Type* t, size_t count, int r, int salt) {
  void* host = malloc(count * t->size + 1);
  for (size_t i = 0; i < count; ++i) store(t, (char*)host + i * t->size, input(t, r, i, salt));
  void* dev = NULL;
  CUDA(cudaMalloc(&dev, count * t->size + 1));
  CUDA(cudaMemcpy(dev, host, count * t->size, cudaMemcpyHostToDevice));
  /* A copy from pageable memory may still be landing when cudaMemcpy returns, and the calls' stream is non-blocking:
   * it does not wait for the legacy stream. */
  CUDA(cudaDeviceSynchronize());
  free(host);
  return dev;
}

static void* hostCopy(const void* dev, size_t bytes) {
  void* host = malloc(bytes + 1);
  CUDA(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
  return host;
}

/* The stream's work done, the device buffer's bytes in host memory (freed by the caller). */
static char* fetch(cudaStream_t s, const void* dev, size_t bytes) {
  CUDA(cudaStreamSynchronize(s));
  return hostCopy(dev, bytes);
}

static const char* opName(ncclRedOp_t op) {
  return op == ncclSum ? "sum" : op == ncclProd ? "prod" : op == ncclMax ? "max" : op == ncclMin ? "min" : "avg";
}

/* The reference of element i of a reduction over n ranks' input `salt`, computed in double. */
static double reference(const Type* t, ncclRedOp_t op, int n, size_t i, int salt) {
  double acc = input(t, 0, i, salt);
  for (int r = 1; r < n; ++r) {
    const double v = input(t, r, i, salt);
    if (op == ncclSum || op == ncclAvg) acc += v;
    if (op == ncclProd) acc *= v;
    if (op == ncclMax) acc = v > acc ? v : acc;
    if (op == ncclMin) acc = v < acc ? v : acc;
  }
  return op == ncclAvg ? acc / n : acc;
}

/* Whether a float type holds v exactly (v is a small integer or half of one here: the range never matters). */
static int holds(const Type* t, double v) {
  int e;
  const double m = frexp(fabs(v), &e); /* v = m * 2^e, m in [0.5, 1) */
  const double scaled = ldexp(m, t->mantissa + 1);
  return scaled == floor(scaled);
}

/* Whether `got` is the reduction's result over n ranks: exact where the type holds the reference (every integer
 * result, and float results whose every partial result is small), else within one rounding per rank. */
static int matches(const Type* t, ncclRedOp_t op, int n, double got, double want) {
  if (got == want) return 1;
  if (!t->isFloat || (op != ncclAvg && holds(t, want))) return 0;
  return fabs(got - want) <= n * ldexp(fabs(want), -t->mantissa);
}

static void allreduces(ncclComm_t comm, cudaStream_t s, int n) {
  const size_t counts[] = {1, 1031, (size_t)1 << 18};
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  int checked = 0;
  for (int k = 0; k < kNumTypes; ++k) {
    const Type* t = &kTypes[k];
    for (int c = 0; c < 3; ++c) {
      const size_t count = counts[c];
      void* in = deviceFilled(t, count, me, 1);
      void* out = NULL;
      CUDA(cudaMalloc(&out, count * t->size));
      for (int o = 0; o < 5; ++o) {
        if (ops[o] == ncclAvg && !t->isFloat) continue; /* NCCL's integer average is its own: not checked here */
        OK(ncclAllReduce(in, out, count, t->type, ops[o], comm, s));
        CUDA(cudaStreamSynchronize(s));
        char* got = hostCopy(out, count * t->size);
        for (size_t i = 0; i < count; ++i) {
          const double g = valueOf(t, got + i * t->size), w = reference(t, ops[o], n, i, 1);
          if (!matches(t, ops[o], n, g, w)) {
            CHECK(0, "allreduce %s %s count %zu element %zu: %g, want %g", t->name, opName(ops[o]), count, i, g, w);
            break;
          }
        }
        free(got);
        ++checked;
      }
      /* In place: sum into the input. */
      OK(ncclAllReduce(in, in, count, t->type, ncclSum, comm, s));
      CUDA(cudaStreamSynchronize(s));
      char* got = hostCopy(in, count * t->size);
      for (size_t i = 0; i < count; ++i) {
        if (valueOf(t, got + i * t->size) != reference(t, ncclSum, n, i, 1)) {
          CHECK(0, "in-place allreduce %s count %zu element %zu", t->name, count, i);
          break;
        }
      }
      free(got);
      CUDA(cudaFree(in));
      CUDA(cudaFree(out));
    }
  }
  if (me == 0) printf("nccl_device_test: %d allreduces checked over %d types\n", checked, kNumTypes);
}

/* Every other collective on int32 and float32, out of place, at one small and one large size. */
static void movers(ncclComm_t comm, cudaStream_t s, int n) {
  const int root = n - 1;
  const Type* types[] = {&kTypes[2], &kTypes[7]};
  const size_t counts[] = {37, (size_t)1 << 17};
  for (int k = 0; k < 2; ++k) {
    const Type* t = types[k];
    for (int c = 0; c < 2; ++c) {
      const size_t count = counts[c], all = count * (size_t)n, z = t->size;
      void* in = deviceFilled(t, all, me, 5);
      void* out = NULL;
      CUDA(cudaMalloc(&out, all * z));
      char* got;
#define EXPECT(cond, ...)                 \
  for (size_t i_ = 0; i_ < count; ++i_) { \
    const size_t i = i_;                  \
    (void)i;                              \
    if (!(cond)) {                        \
      CHECK(0, __VA_ARGS__);              \
      break;                              \
    }                                     \
  }
      OK(ncclBroadcast(in, out, count, t->type, root, comm, s));
      got = fetch(s, out, count * z);
      EXPECT(valueOf(t, got + i * z) == input(t, root, i, 5), "broadcast %s %zu element %zu", t->name, count, i);
      free(got);

      CUDA(cudaMemset(out, 0, all * z));
      CUDA(cudaDeviceSynchronize());
      OK(ncclReduce(in, out, count, t->type, ncclSum, root, comm, s));
      got = fetch(s, out, count * z);
      if (me == root) {
        EXPECT(valueOf(t, got + i * z) == reference(t, ncclSum, n, i, 5), "reduce %s %zu element %zu", t->name, count,
               i);
      }
      free(got);

      OK(ncclAllGather(in, out, count, t->type, comm, s));
      got = fetch(s, out, all * z);
      for (int r = 0; r < n; ++r) {
        EXPECT(valueOf(t, got + ((size_t)r * count + i) * z) == input(t, r, i, 5), "allgather %s %zu block %d", t->name,
               count, r);
      }
      free(got);

      OK(ncclReduceScatter(in, out, count, t->type, ncclSum, comm, s));
      got = fetch(s, out, count * z);
      EXPECT(valueOf(t, got + i * z) == reference(t, ncclSum, n, (size_t)me * count + i, 5),
             "reduce_scatter %s %zu element %zu", t->name, count, i);
      free(got);

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
      OK(ncclAlltoAll(in, out, count, t->type, comm, s));
      got = fetch(s, out, all * z);
      for (int r = 0; r < n; ++r) {
        EXPECT(valueOf(t, got + ((size_t)r * count + i) * z) == input(t, r, (size_t)me * count + i, 5),
               "alltoall %s %zu block %d", t->name, count, r);
      }
      free(got);

      OK(ncclGather(in, out, count, t->type, root, comm, s));
      got = fetch(s, out, all * z);
      if (me == root) {
        for (int r = 0; r < n; ++r) {
          EXPECT(valueOf(t, got + ((size_t)r * count + i) * z) == input(t, r, i, 5), "gather %s %zu block %d", t->name,
                 count, r);
        }
      }
      free(got);

      OK(ncclScatter(in, out, count, t->type, root, comm, s));
      got = fetch(s, out, count * z);
      EXPECT(valueOf(t, got + i * z) == input(t, root, (size_t)me * count + i, 5), "scatter %s %zu element %zu",
             t->name, count, i);
      free(got);
#endif

      /* A ring of send/recv in one group. */
      OK(ncclGroupStart());
      OK(ncclSend(in, count, t->type, (me + 1) % n, comm, s));
      OK(ncclRecv(out, count, t->type, (me + n - 1) % n, comm, s));
      OK(ncclGroupEnd());
      got = fetch(s, out, count * z);
      EXPECT(valueOf(t, got + i * z) == input(t, (me + n - 1) % n, i, 5), "send/recv ring %s %zu element %zu", t->name,
             count, i);
      free(got);
#undef EXPECT
      CUDA(cudaFree(in));
      CUDA(cudaFree(out));
    }
  }
}

/* premul_sum with a device-resident scalar per rank, and an allreduce captured into a CUDA graph and replayed. */
static void extras(ncclComm_t comm, cudaStream_t s, int n) {
  const Type* t = &kTypes[7]; /* float32 */
  const size_t count = 4099;
  void* in = deviceFilled(t, count, me, 3);
  float* out = NULL;
  float* scalar = NULL;
  CUDA(cudaMalloc((void**)&out, count * sizeof(float)));
  CUDA(cudaMalloc((void**)&scalar, sizeof(float)));
  const float mine = (float)(me + 1);
  CUDA(cudaMemcpy(scalar, &mine, sizeof mine, cudaMemcpyHostToDevice));
  CUDA(cudaDeviceSynchronize());
  ncclRedOp_t premul;
  OK(ncclRedOpCreatePreMulSum(&premul, scalar, ncclFloat32, ncclScalarDevice, comm));
  OK(ncclAllReduce(in, out, count, ncclFloat32, premul, comm, s));
  CUDA(cudaStreamSynchronize(s));
  float* got = hostCopy(out, count * sizeof(float));
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += (r + 1) * input(t, r, i, 3);
    if (got[i] != want) {
      CHECK(0, "premul_sum with a device scalar, element %zu: %g, want %g", i, got[i], want);
      break;
    }
  }
  free(got);
  OK(ncclRedOpDestroy(premul, comm));

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const ncclResult_t captured = ncclAllReduce(in, out, count, ncclFloat32, ncclMax, comm, s);
  CUDA(cudaStreamEndCapture(s, &graph));
  if (captured != ncclSuccess) {
    /* braid stages device buffers through host memory where its kernels cannot connect the ranks (ranks on several
     * hosts, processes sharing a GPU): such a call cannot be captured, and says so by name. Nothing else may fail. */
    const char* why = ncclGetLastError(comm);
    CHECK(strstr(ncclGetErrorString(ncclInvalidUsage), "BRAID_LOG") != NULL && strstr(why, "CUDA graph") != NULL,
          "ncclAllReduce under capture returned %d: %s", (int)captured, why);
    if (me == 0) printf("nccl_device_test: capture refused by name (%s)\n", why);
  } else {
    CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 3; ++replay) {
      CUDA(cudaMemsetAsync(out, 0, count * sizeof(float), s));
      CUDA(cudaGraphLaunch(exec, s));
      CUDA(cudaStreamSynchronize(s));
      got = hostCopy(out, count * sizeof(float));
      for (size_t i = 0; i < count; ++i) {
        if (got[i] != reference(t, ncclMax, n, i, 3)) {
          CHECK(0, "graph replay %d element %zu: %g, want %g", replay, i, got[i], reference(t, ncclMax, n, i, 3));
          break;
        }
      }
      free(got);
    }
    CUDA(cudaGraphExecDestroy(exec));
  }
  CUDA(cudaGraphDestroy(graph));
  CUDA(cudaFree(in));
  CUDA(cudaFree(out));
  CUDA(cudaFree(scalar));
}

static int rankMain(int n, int distinctHosts, int idIn, int idOut[]) {
  char host[32];
  if (distinctHosts) {
    snprintf(host, sizeof host, "nccl-device-test-%d", me);
    setenv("NCCL_HOSTID", host, 1);
    setenv("NCCL_P2P_DISABLE", "1", 1);
    setenv("NCCL_SHM_DISABLE", "1", 1);
  }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 1) return 2;
  CUDA(cudaSetDevice(me % gpus));
  ncclUniqueId id;
  if (me == 0) {
    OK(ncclGetUniqueId(&id));
    for (int r = 1; r < n; ++r)
      if (write(idOut[r], &id, sizeof id) != (ssize_t)sizeof id) return 1;
  } else if (read(idIn, &id, sizeof id) != (ssize_t)sizeof id) {
    return 1;
  }
  ncclComm_t comm;
  OK(ncclCommInitRank(&comm, n, id, me));
  int version = 0;
  OK(ncclGetVersion(&version));
  if (me == 0)
    printf("nccl_device_test: %d ranks on %d GPU(s), NCCL version %d%s\n", n, gpus, version,
           distinctHosts ? ", each rank its own host id" : "");
  cudaStream_t s;
  CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  allreduces(comm, s, n);
  movers(comm, s, n);
  extras(comm, s, n);
  OK(ncclCommFinalize(comm));
  OK(ncclCommDestroy(comm));
  CUDA(cudaStreamDestroy(s));
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 2;
  const int distinctHosts = argc > 2 && strcmp(argv[2], "--distinct-hosts") == 0;
  if (n < 2 || n > 8) {
    fprintf(stderr, "usage: %s RANKS(2..8) [--distinct-hosts]\n", argv[0]);
    return 64;
  }
  /* No CUDA call here: a process that used CUDA cannot hand it to forked children. Rank 0 makes the id. */
  int pipes[8][2];
  pid_t pids[8];
  for (int r = 0; r < n; ++r)
    if (pipe(pipes[r]) != 0) return 1;
  int writeEnds[8];
  for (int r = 0; r < n; ++r) writeEnds[r] = pipes[r][1];
  for (int r = 0; r < n; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      me = r;
      alarm(300); /* a hang fails the run instead of stalling it */
      _exit(rankMain(n, distinctHosts, pipes[r][0], writeEnds));
    }
  }
  int status = 0;
  for (int r = 0; r < n; ++r) {
    int s = 0;
    waitpid(pids[r], &s, 0);
    if (WIFEXITED(s) && WEXITSTATUS(s) == 2) {
      status = status ? status : 2;
      if (r == 0) fprintf(stderr, "nccl_device_test: no CUDA device\n");
    } else if (!WIFEXITED(s) || WEXITSTATUS(s) != 0) {
      fprintf(stderr, "rank %d failed (%s %d)\n", r, WIFEXITED(s) ? "exit" : "signal",
              WIFEXITED(s) ? WEXITSTATUS(s) : WTERMSIG(s));
      status = 1;
    }
  }
  if (status == 0) printf("nccl_device_test: %d ranks passed\n", n);
  return status;
}
