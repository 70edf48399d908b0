/* The checks of the C programs that test NCCL's API: each defines `static int me` (its rank, -1 before it has one)
 * and `static int failures` before including this. */
#pragma once

#include <nccl.h>
#include <stdio.h>
#include <unistd.h>

/* A check that counts its failure and goes on: later checks still say what else is wrong. */
#define CHECK(cond, ...)                                           \
  do {                                                             \
    if (!(cond)) {                                                 \
      fprintf(stderr, "rank %d: %s:%d: ", me, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                \
      fprintf(stderr, "\n");                                       \
      ++failures;                                                  \
    }                                                              \
  } while (0)

/* A call that must succeed; on failure the rank stops here (later checks would only repeat it). */
#define OK(call)                                                                                           \
  do {                                                                                                     \
    ncclResult_t r_ = (call);                                                                              \
    if (r_ != ncclSuccess) {                                                                               \
      fprintf(stderr, "rank %d: %s:%d: %s returned %d (%s): %s\n", me, __FILE__, __LINE__, #call, (int)r_, \
              ncclGetErrorString(r_), ncclGetLastError(NULL));                                             \
      fflush(stderr);                                                                                      \
      _exit(1);                                                                                            \
    }                                                                                                      \
  } while (0)
