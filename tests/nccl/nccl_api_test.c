/* NCCL's C API on braid, as a program written for NCCL uses it: ranks are processes forked here, buffers are host
 * memory (what braid adds to NCCL, and what a machine without a GPU can run), every expected value is computed by
 * this program. Usage: nccl_api_test [RANKS] | --one-thread RANKS | --grow RANKS (NCCL 2.30 headers). Exit status 0
 * when every rank passed; each failure is printed with its rank, its check and ncclGetLastError(). */
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int me = -1;
static int failures = 0;

#include "nccl_checks.h"

/* rank r's element i of input `salt`: small integers, so every sum and product is exact in every type. */
static int64_t value(int r, size_t i, int salt) { return (int64_t)((i * 7 + (size_t)r * 3 + (size_t)salt) % 11) - 3; }

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void reductions(ncclComm_t comm, int n) {
  enum { kCount = 1031 };
  int32_t in[kCount], out[kCount];
  double din[kCount], dout[kCount];
  for (size_t i = 0; i < kCount; ++i) {
    in[i] = (int32_t)value(me, i, 1);
    din[i] = (double)value(me, i, 2) / 4.0;
  }
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  for (int k = 0; k < 5; ++k) {
    OK(ncclAllReduce(in, out, kCount, ncclInt32, ops[k], comm, NULL));
    OK(ncclAllReduce(din, dout, kCount, ncclFloat64, ops[k], comm, NULL));
    for (size_t i = 0; i < kCount; ++i) {
      int64_t acc = value(0, i, 1);
      double dacc = (double)value(0, i, 2) / 4.0;
      for (int r = 1; r < n; ++r) {
        const int64_t v = value(r, i, 1);
        const double d = (double)value(r, i, 2) / 4.0;
        if (ops[k] == ncclSum || ops[k] == ncclAvg) acc += v, dacc += d;
        if (ops[k] == ncclProd) acc *= v, dacc *= d;
        if (ops[k] == ncclMax) acc = v > acc ? v : acc, dacc = d > dacc ? d : dacc;
        if (ops[k] == ncclMin) acc = v < acc ? v : acc, dacc = d < dacc ? d : dacc;
      }
      if (ops[k] == ncclAvg) acc /= n, dacc /= n; /* integers: truncation toward zero, as C's division */
      if (out[i] != (int32_t)acc || dout[i] != dacc) {
        CHECK(0, "allreduce op %d element %zu: int32 %d (want %lld), float64 %g (want %g)", (int)ops[k], i, (int)out[i],
              (long long)acc, dout[i], dacc);
        break;
      }
    }
  }
  /* In place. */
  memcpy(out, in, sizeof in);
  OK(ncclAllReduce(out, out, kCount, ncclInt32, ncclSum, comm, NULL));
  for (size_t i = 0; i < kCount; ++i) {
    int64_t want = 0;
    for (int r = 0; r < n; ++r) want += value(r, i, 1);
    if (out[i] != want) {
      CHECK(0, "in-place allreduce element %zu: %d, want %lld", i, (int)out[i], (long long)want);
      break;
    }
  }
  /* premul_sum: each rank's own scalar (rank + 1), host-resident, read when the operator is made. */
  double scalar = (double)(me + 1);
  ncclRedOp_t premul;
  OK(ncclRedOpCreatePreMulSum(&premul, &scalar, ncclFloat64, ncclScalarHostImmediate, comm));
  CHECK((int)premul >= (int)ncclNumOps, "a premul_sum operator is numbered after the built-in ones (%d)", (int)premul);
  scalar = 100; /* read at creation: changing it now changes nothing */
  OK(ncclAllReduce(din, dout, kCount, ncclFloat64, premul, comm, NULL));
  for (size_t i = 0; i < kCount; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += (double)(r + 1) * ((double)value(r, i, 2) / 4.0);
    if (dout[i] != want) {
      CHECK(0, "premul_sum element %zu: %g, want %g", i, dout[i], want);
      break;
    }
  }
  OK(ncclRedOpDestroy(premul, comm));
  CHECK(ncclAllReduce(din, dout, kCount, ncclFloat64, premul, comm, NULL) == ncclInvalidArgument,
        "a destroyed operator is refused");
}

static void movers(ncclComm_t comm, int n) {
  enum { kCount = 37 };
  const int root = n - 1;
  int64_t send[kCount * 8], recv[kCount * 8], want[kCount * 8];
  for (size_t i = 0; i < (size_t)kCount * (size_t)n; ++i) send[i] = value(me, i, 5);

  /* Broadcast out of place, and Bcast in place. */
  memset(recv, 0, sizeof recv);
  OK(ncclBroadcast(send, recv, kCount, ncclInt64, root, comm, NULL));
  for (size_t i = 0; i < kCount; ++i) CHECK(recv[i] == value(root, i, 5), "broadcast element %zu", i);
  for (size_t i = 0; i < kCount; ++i) recv[i] = me == 0 ? value(0, i, 6) : -1;
  OK(ncclBcast(recv, kCount, ncclInt64, 0, comm, NULL));
  for (size_t i = 0; i < kCount; ++i) CHECK(recv[i] == value(0, i, 6), "bcast element %zu", i);

  /* Reduce to the root. */
  memset(recv, 0, sizeof recv);
  OK(ncclReduce(send, recv, kCount, ncclInt64, ncclSum, root, comm, NULL));
  if (me == root) {
    for (size_t i = 0; i < kCount; ++i) {
      int64_t w = 0;
      for (int r = 0; r < n; ++r) w += value(r, i, 5);
      CHECK(recv[i] == w, "reduce element %zu: %lld, want %lld", i, (long long)recv[i], (long long)w);
    }
  }

  /* AllGather: rank r's first block at block r. */
  OK(ncclAllGather(send, recv, kCount, ncclInt64, comm, NULL));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < kCount; ++i) want[(size_t)r * kCount + i] = value(r, i, 5);
  CHECK(memcmp(recv, want, sizeof(int64_t) * kCount * (size_t)n) == 0, "allgather");

  /* ReduceScatter: block r of the sum to rank r. */
  OK(ncclReduceScatter(send, recv, kCount, ncclInt64, ncclSum, comm, NULL));
  for (size_t i = 0; i < kCount; ++i) {
    int64_t w = 0;
    for (int r = 0; r < n; ++r) w += value(r, (size_t)me * kCount + i, 5);
    CHECK(recv[i] == w, "reduce_scatter element %zu", i);
  }

  /* AlltoAll: block j of rank r goes to rank j's block r. */
  OK(ncclAlltoAll(send, recv, kCount, ncclInt64, comm, NULL));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < kCount; ++i) want[(size_t)r * kCount + i] = value(r, (size_t)me * kCount + i, 5);
  CHECK(memcmp(recv, want, sizeof(int64_t) * kCount * (size_t)n) == 0, "alltoall");

  /* Gather to the root, Scatter from it. */
  OK(ncclGather(send, recv, kCount, ncclInt64, root, comm, NULL));
  if (me == root) {
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kCount; ++i) want[(size_t)r * kCount + i] = value(r, i, 5);
    CHECK(memcmp(recv, want, sizeof(int64_t) * kCount * (size_t)n) == 0, "gather");
  }
  OK(ncclScatter(send, recv, kCount, ncclInt64, root, comm, NULL));
  for (size_t i = 0; i < kCount; ++i)
    CHECK(recv[i] == value(root, (size_t)me * kCount + i, 5), "scatter element %zu", i);
}

static void groups(ncclComm_t comm, int n) {
  enum { kCount = 4099 };
  static float ring[kCount], got[kCount], sum[kCount], gathered[kCount * 8];
  for (size_t i = 0; i < kCount; ++i) ring[i] = (float)value(me, i, 7);
  /* A ring of sends and receives: in NCCL and here, only a group lets every rank send before it receives. */
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  OK(ncclGroupStart());
  OK(ncclSend(ring, kCount, ncclFloat32, next, comm, NULL));
  OK(ncclRecv(got, kCount, ncclFloat32, prev, comm, NULL));
  OK(ncclGroupEnd());
  for (size_t i = 0; i < kCount; ++i) CHECK(got[i] == (float)value(prev, i, 7), "ring element %zu", i);

  /* Collectives in a nested group run at the outermost end, in order. */
  OK(ncclGroupStart());
  OK(ncclGroupStart());
  OK(ncclAllReduce(ring, sum, kCount, ncclFloat32, ncclSum, comm, NULL));
  OK(ncclGroupEnd());
  OK(ncclAllGather(ring, gathered, 1, ncclFloat32, comm, NULL));
  OK(ncclGroupEnd());
  for (size_t i = 0; i < kCount; ++i) {
    float w = 0;
    for (int r = 0; r < n; ++r) w += (float)value(r, i, 7);
    if (sum[i] != w) {
      CHECK(0, "grouped allreduce element %zu: %g, want %g", i, sum[i], w);
      break;
    }
  }
  for (int r = 0; r < n; ++r) CHECK(gathered[r] == (float)value(r, 0, 7), "grouped allgather block %d", r);

  /* A simulated group runs nothing. */
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  for (size_t i = 0; i < kCount; ++i) sum[i] = -1;
  OK(ncclGroupStart());
  OK(ncclAllReduce(ring, sum, kCount, ncclFloat32, ncclSum, comm, NULL));
  OK(ncclGroupSimulateEnd(&sim));
  CHECK(sum[0] == -1 && sum[kCount - 1] == -1, "a simulated group ran its allreduce");
}

static void refusals(ncclComm_t comm) {
  int32_t x[4] = {0};
  CHECK(ncclAllReduce(x, x, 4, (ncclDataType_t)99, ncclSum, comm, NULL) == ncclInvalidArgument,
        "an unknown data type is refused");
  CHECK(strstr(ncclGetLastError(comm), "99") != NULL, "the last error names the type: %s", ncclGetLastError(comm));
  CHECK(ncclAllReduce(x, x, 4, ncclInt32, (ncclRedOp_t)77, comm, NULL) == ncclInvalidArgument,
        "an unknown operator is refused");
  CHECK(ncclAllReduce(x, x, 4, ncclInt32, ncclSum, NULL, NULL) == ncclInvalidArgument, "a null communicator");
  CHECK(ncclGroupEnd() == ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  CHECK(ncclRedOpDestroy(ncclSum, comm) == ncclInvalidArgument, "a built-in operator cannot be destroyed");
  CHECK(ncclSend(x, 4, ncclInt32, 1000, comm, NULL) == ncclInvalidArgument, "a peer out of range");
  int count = 0, rank = -1;
  OK(ncclCommCount(comm, &count));
  OK(ncclCommUserRank(comm, &rank));
  CHECK(rank == me, "ncclCommUserRank says %d", rank);
  CHECK(count > 0, "ncclCommCount says %d", count);
  int version = 0;
  OK(ncclGetVersion(&version));
  CHECK(version == NCCL_VERSION_CODE, "ncclGetVersion says %d, the header %d", version, NCCL_VERSION_CODE);
  for (int r = 0; r < (int)ncclNumResults; ++r)
    CHECK(ncclGetErrorString((ncclResult_t)r) != NULL, "error string %d", r);
}

static void splits(ncclComm_t comm, int n) {
  /* Even and odd ranks form two communicators; the last rank of an odd count stays out. */
  const int color = (n % 2 == 1 && me == n - 1) ? NCCL_SPLIT_NOCOLOR : me % 2;
  ncclComm_t half = NULL;
  OK(ncclCommSplit(comm, color, me, &half, NULL));
  if (color == NCCL_SPLIT_NOCOLOR) {
    CHECK(half == NULL, "NCCL_SPLIT_NOCOLOR gives no communicator");
    return;
  }
  int size = 0, rank = -1;
  OK(ncclCommCount(half, &size));
  OK(ncclCommUserRank(half, &rank));
  int members = 0;
  for (int r = 0; r < n; ++r) members += (n % 2 == 1 && r == n - 1) ? 0 : r % 2 == me % 2;
  CHECK(size == members && rank == me / 2, "split: rank %d of %d, want %d of %d", rank, size, me / 2, members);
  int64_t v = me, total = 0;
  OK(ncclAllReduce(&v, &total, 1, ncclInt64, ncclSum, half, NULL));
  int64_t want = 0;
  for (int r = 0; r < n; ++r) want += ((n % 2 == 1 && r == n - 1) || r % 2 != me % 2) ? 0 : r;
  CHECK(total == want, "allreduce within the split: %lld, want %lld", (long long)total, (long long)want);
  OK(ncclCommDestroy(half));
}

static void nonBlocking(const ncclUniqueId* id, int n) {
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  ncclComm_t comm = NULL;
  CHECK(ncclCommInitRankConfig(&comm, n, *id, me, &bad) == ncclInvalidArgument, "a config not initialised");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t started = ncclCommInitRankConfig(&comm, n, *id, me, &config);
  CHECK(started == ncclInProgress || started == ncclSuccess, "a non-blocking creation returned %d", (int)started);
  ncclResult_t state = ncclInProgress;
  const double deadline = seconds() + 60;
  while (state == ncclInProgress && seconds() < deadline) {
    OK(ncclCommGetAsyncError(comm, &state));
    if (state == ncclInProgress) usleep(1000);
  }
  CHECK(state == ncclSuccess, "the non-blocking creation ended with %d: %s", (int)state, ncclGetLastError(comm));
  int32_t one = 1, total = 0;
  OK(ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, comm, NULL));
  CHECK(total == n, "allreduce on the non-blocking communicator: %d", (int)total);
  OK(ncclCommFinalize(comm));
  const double start = seconds();
  OK(ncclCommAbort(comm));
  CHECK(seconds() - start < 2, "ncclCommAbort took %.1f s", seconds() - start);
}

static void lostPeer(const ncclUniqueId* id, int n) {
  /* The last rank dies without a word: every other rank's next call fails as a remote error within seconds,
   * naming the lost rank, where NCCL would wait for a watchdog. */
  ncclComm_t comm = NULL;
  OK(ncclCommInitRank(&comm, n, *id, me));
  int32_t one = 1, total = 0;
  OK(ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, comm, NULL));
  if (me == n - 1) _exit(failures == 0 ? 0 : 1);
  const double start = seconds();
  const ncclResult_t r = ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, comm, NULL);
  const double took = seconds() - start;
  CHECK(r == ncclRemoteError, "the call after a peer died returned %d: %s", (int)r, ncclGetLastError(comm));
  CHECK(took < 10, "the lost peer took %.1f s to surface", took);
  char lost[32];
  snprintf(lost, sizeof lost, "%d", n - 1);
  CHECK(strstr(ncclGetLastError(comm), lost) != NULL, "the message names rank %d: %s", n - 1, ncclGetLastError(comm));
  OK(ncclCommAbort(comm));
}

static void mismatch(ncclComm_t comm) {
  /* Ranks that call with different counts fail on every rank, as invalid usage, naming what differed. */
  int32_t x[8] = {0};
  const ncclResult_t r = ncclAllReduce(x, x, me == 0 ? 8 : 4, ncclInt32, ncclSum, comm, NULL);
  CHECK(r == ncclInvalidUsage, "mismatched counts returned %d: %s", (int)r, ncclGetLastError(comm));
  CHECK(strstr(ncclGetLastError(comm), "Mismatch") != NULL, "the message says Mismatch: %s", ncclGetLastError(comm));
}

/* A watchdog's abort: rank 0 waits in a call its peers never make; another of its threads aborts the
 * communicator, and the call returns an error within seconds (the object is freed only after the call left it). */
struct Watchdog {
  ncclComm_t comm;
  double abortedAt;
  ncclResult_t result;
};

static void* watchdog(void* arg) {
  struct Watchdog* w = (struct Watchdog*)arg;
  usleep(300 * 1000);
  w->abortedAt = seconds();
  w->result = ncclCommAbort(w->comm);
  return NULL;
}

static void abortFromAnotherThread(const ncclUniqueId* id, int n) {
  ncclComm_t comm = NULL;
  OK(ncclCommInitRank(&comm, n, *id, me));
  if (me != 0) {
    usleep(2000 * 1000); /* never joins rank 0's call */
    OK(ncclCommAbort(comm));
    return;
  }
  struct Watchdog w = {comm, 0, ncclSuccess};
  pthread_t thread;
  if (pthread_create(&thread, NULL, watchdog, &w) != 0) {
    CHECK(0, "pthread_create");
    return;
  }
  int32_t one = 1, total = 0;
  const ncclResult_t r = ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, comm, NULL);
  const double returned = seconds();
  pthread_join(thread, NULL);
  CHECK(r != ncclSuccess, "the aborted call succeeded");
  CHECK(w.result == ncclSuccess, "ncclCommAbort returned %d", (int)w.result);
  CHECK(returned - w.abortedAt < 2, "the call returned %.1f s after the abort", returned - w.abortedAt);
}

enum { kIds = 4 };

static int rankMain(int n, int idPipe) {
  ncclUniqueId ids[kIds];
  if (read(idPipe, ids, sizeof ids) != (ssize_t)sizeof ids) {
    fprintf(stderr, "rank %d: no unique ids from the parent\n", me);
    return 1;
  }
  const ncclUniqueId id = ids[0];
  ncclComm_t comm = NULL;
  OK(ncclCommInitRank(&comm, n, id, me));
  reductions(comm, n);
  movers(comm, n);
  groups(comm, n);
  refusals(comm);
  splits(comm, n);
  nonBlocking(&ids[1], n);
  mismatch(comm);
  OK(ncclCommDestroy(comm));
  lostPeer(&ids[2], n);
  /* The last rank left in lostPeer: the others, when they are two or more, abort from a watchdog. */
  if (me != n - 1 && n - 1 >= 2) abortFromAnotherThread(&ids[3], n - 1);
  return failures == 0 ? 0 : 1;
}

/* One thread drives every rank, as a single process over its GPUs does: creations and calls of several
 * communicators in one group, each completing at the group's end. */
static int oneThread(int n) {
  ncclUniqueId id;
  OK(ncclGetUniqueId(&id));
  ncclComm_t comms[8];
  OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) OK(ncclCommInitRank(&comms[r], n, id, r));
  OK(ncclGroupEnd());
  enum { kCount = 513 };
  static int64_t in[8][kCount], out[8][kCount], gathered[8][8];
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < kCount; ++i) in[r][i] = value(r, i, 9);
  OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    OK(ncclAllReduce(in[r], out[r], kCount, ncclInt64, ncclMax, comms[r], NULL));
    OK(ncclAllGather(&in[r][0], gathered[r], 1, ncclInt64, comms[r], NULL));
  }
  OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) {
    int rank = -1;
    OK(ncclCommUserRank(comms[r], &rank));
    CHECK(rank == r, "communicator %d has rank %d", r, rank);
    for (size_t i = 0; i < kCount; ++i) {
      int64_t want = value(0, i, 9);
      for (int q = 1; q < n; ++q) want = value(q, i, 9) > want ? value(q, i, 9) : want;
      if (out[r][i] != want) {
        CHECK(0, "one thread: rank %d element %zu: %lld, want %lld", r, i, (long long)out[r][i], (long long)want);
        break;
      }
    }
    for (int q = 0; q < n; ++q) CHECK(gathered[r][q] == value(q, 0, 9), "one thread: rank %d block %d", r, q);
  }
  for (int r = 0; r < n; ++r) OK(ncclCommDestroy(comms[r]));
  if (failures == 0) printf("nccl_api_test: one thread drove %d ranks\n", n);
  return failures == 0 ? 0 : 1;
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 30, 0)
/* NCCL 2.30's grow: N ranks add one. The existing root makes the id (ncclCommGetUniqueId) and hands it to the new
 * rank out of band (a pipe here); the other existing ranks pass NULL and rank -1. Every rank of the grown
 * communicator then allreduces its rank. */
static int grow(int n) {
  int idPipe[2], growPipe[2];
  if (pipe(idPipe) != 0 || pipe(growPipe) != 0) return 2;
  pid_t pids[9];
  for (int r = 0; r <= n; ++r) {
    pids[r] = fork();
    if (pids[r] != 0) continue;
    me = r;
    alarm(120);
    ncclComm_t grown = NULL;
    if (r < n) {
      ncclUniqueId id, gid;
      if (read(idPipe[0], &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
      ncclComm_t comm = NULL;
      OK(ncclCommInitRank(&comm, n, id, r));
      if (r == 0) {
        OK(ncclCommGetUniqueId(comm, &gid));
        if (write(growPipe[1], &gid, sizeof gid) != (ssize_t)sizeof gid) _exit(1);
      }
      CHECK(ncclCommGrow(comm, n + 1, NULL, 0, &grown, NULL) == ncclInvalidArgument, "an existing rank passes rank -1");
      OK(ncclCommGrow(comm, n + 1, r == 0 ? &gid : NULL, -1, &grown, NULL));
      OK(ncclCommDestroy(comm));
    } else {
      ncclUniqueId gid;
      if (read(growPipe[0], &gid, sizeof gid) != (ssize_t)sizeof gid) _exit(1);
      OK(ncclCommGrow(NULL, n + 1, &gid, n, &grown, NULL));
    }
    int rank = -1, size = 0;
    OK(ncclCommUserRank(grown, &rank));
    OK(ncclCommCount(grown, &size));
    CHECK(rank == r && size == n + 1, "grown: rank %d of %d, want %d of %d", rank, size, r, n + 1);
    int64_t mine = r, total = 0;
    OK(ncclAllReduce(&mine, &total, 1, ncclInt64, ncclSum, grown, NULL));
    CHECK(total == (int64_t)n * (n + 1) / 2, "allreduce on the grown communicator: %lld", (long long)total);
    OK(ncclCommDestroy(grown));
    _exit(failures == 0 ? 0 : 1);
  }
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
  for (int r = 0; r < n; ++r) {
    if (write(idPipe[1], &id, sizeof id) != (ssize_t)sizeof id) return 1;
  }
  int status = 0;
  for (int r = 0; r <= n; ++r) {
    int s = 0;
    if (waitpid(pids[r], &s, 0) != pids[r] || !WIFEXITED(s) || WEXITSTATUS(s) != 0) status = 1;
  }
  if (status == 0) printf("nccl_api_test: %d ranks grew to %d\n", n, n + 1);
  return status;
}
#endif

int main(int argc, char** argv) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 30, 0)
  if (argc > 2 && strcmp(argv[1], "--grow") == 0)
    return grow(atoi(argv[2]) < 1 || atoi(argv[2]) > 7 ? 2 : atoi(argv[2]));
#else
  if (argc > 2 && strcmp(argv[1], "--grow") == 0) {
    printf("nccl_api_test: --grow needs NCCL 2.30's nccl.h (built against %d.%d): not run\n", NCCL_MAJOR, NCCL_MINOR);
    return 0;
  }
#endif
  if (argc > 2 && strcmp(argv[1], "--one-thread") == 0) {
    const int n = atoi(argv[2]);
    if (n < 1 || n > 8) return 2;
    alarm(120);
    return oneThread(n);
  }
  const int n = argc > 1 ? atoi(argv[1]) : 3;
  if (n < 2 || n > 8) {
    fprintf(stderr, "usage: %s [RANKS 2..8]\n", argv[0]);
    return 2;
  }
  int pipes[8][2];
  pid_t pids[8];
  for (int r = 0; r < n; ++r) {
    if (pipe(pipes[r]) != 0) return 2;
    pids[r] = fork();
    if (pids[r] == 0) {
      me = r;
      alarm(120); /* a hang fails the run instead of stalling it */
      _exit(rankMain(n, pipes[r][0]));
    }
  }
  /* The ids (and their rendezvous servers) live in this process, made after the fork as a launcher would. */
  ncclUniqueId ids[kIds];
  for (int i = 0; i < kIds; ++i) {
    if (ncclGetUniqueId(&ids[i]) != ncclSuccess) {
      fprintf(stderr, "ncclGetUniqueId: %s\n", ncclGetLastError(NULL));
      for (int r = 0; r < n; ++r) kill(pids[r], SIGKILL);
      return 1;
    }
  }
  for (int r = 0; r < n; ++r) {
    if (write(pipes[r][1], ids, sizeof ids) != (ssize_t)sizeof ids) return 1;
  }
  int status = 0;
  for (int r = 0; r < n; ++r) {
    int s = 0;
    if (waitpid(pids[r], &s, 0) != pids[r] || !WIFEXITED(s) || WEXITSTATUS(s) != 0) {
      fprintf(stderr, "rank %d failed (%s %d)\n", r, WIFEXITED(s) ? "exit" : "signal",
              WIFEXITED(s) ? WEXITSTATUS(s) : WTERMSIG(s));
      status = 1;
    }
  }
  if (status == 0) printf("nccl_api_test: %d ranks passed\n", n);
  return status;
}
