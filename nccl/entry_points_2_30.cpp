// The entry points NCCL 2.30 added (PyTorch 2.15's NCCL backend imports most of them), built where nccl.h is 2.30 or
// later: growing a communicator, suspending it, its memory statistics and window pointers are served; NCCL's
// one-sided signals, its device API and its parameter system are refused by name (ncclInvalidUsage).
#include <nccl.h>

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 30, 0)

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "entry.hpp"

using namespace braid;        // NOLINT: the entry points below are all this file is
using namespace braid::nccl;  // NOLINT

namespace {

void copyId(UniqueId& to, const ncclUniqueId& from) {
  static_assert(sizeof to.bytes == sizeof from.internal, "a braid id fills an ncclUniqueId");
  std::memcpy(to.bytes, from.internal, sizeof to.bytes);
}

}  // namespace

NCCL_EXPORT ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) {
  return guarded("ncclCommGetUniqueId", [&] {
    requireUsable(comm);
    if (uniqueId == nullptr) throw Error(ErrorCode::kInvalidArgument, "uniqueId is null");
    // The id's rendezvous server runs in this process until the grow is done, as NCCL's root serves its id.
    const UniqueId id = Communicator::uniqueId();
    std::memcpy(uniqueId->internal, id.bytes, sizeof id.bytes);
  });
}
NCCL_ALIAS(ncclCommGetUniqueId)

NCCL_EXPORT ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                                      ncclComm_t* newcomm, ncclConfig_t* config) {
  return guarded("ncclCommGrow", [&]() -> ncclResult_t {
    if (newcomm == nullptr) throw Error(ErrorCode::kInvalidArgument, "newcomm is null");
    const Creation how = creationOf(config);
    UniqueId id{};
    if (comm == nullptr) {
      // A new rank: it joins with the root's id at the rank it was given.
      if (uniqueId == nullptr || rank < 0) {
        throw Error(ErrorCode::kInvalidArgument,
                    "a new rank passes the unique id and its rank (rank " + std::to_string(rank) + ")");
      }
      copyId(id, *uniqueId);
      return startCreation(
          newcomm, rank, nRanks, how,
          [id, rank, nRanks](std::shared_ptr<AbortHandle> abort) {
            return Communicator::create(id, rank, nRanks, std::move(abort));
          },
          "ncclCommGrow");
    }
    requireUsable(comm);
    if (rank != -1) {
      throw Error(ErrorCode::kInvalidArgument,
                  "an existing rank passes rank -1 (it keeps its rank), not " + std::to_string(rank));
    }
    if (nRanks <= comm->size) {
      throw Error(ErrorCode::kInvalidArgument,
                  "growing " + std::to_string(comm->size) + " ranks to " + std::to_string(nRanks) + " adds none");
    }
    // The existing root passes the id, the other existing ranks NULL: the root is found, and its id sent, over the
    // communicator they already have.
    Communicator& old = communicatorOf(comm);
    const std::int32_t mine = uniqueId != nullptr ? comm->rank : -1;
    std::int32_t root = -1;
    old.allreduce(&mine, &root, 1, DataType::kInt32, ReduceKind::kMax);
    if (root < 0) throw Error(ErrorCode::kInvalidArgument, "no existing rank passed the unique id (the root does)");
    if (uniqueId != nullptr) copyId(id, *uniqueId);
    old.broadcast(id.bytes, sizeof id.bytes, DataType::kUint8, root);
    const int keep = comm->rank;
    return startCreation(
        newcomm, keep, nRanks, how,
        [id, keep, nRanks](std::shared_ptr<AbortHandle> abort) {
          return Communicator::create(id, keep, nRanks, std::move(abort));
        },
        "ncclCommGrow");
  });
}
NCCL_ALIAS(ncclCommGrow)

NCCL_EXPORT ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags) {
  return guarded("ncclCommSuspend", [&] {
    requireUsable(comm);
    if ((flags & ~NCCL_SUSPEND_MEM) != 0) {
      throw Error(ErrorCode::kInvalidArgument, "suspend flags " + std::to_string(flags) + " are not NCCL_SUSPEND_*");
    }
    (void)communicatorOf(comm);  // a creation in progress ends first
    // braid keeps its workspaces while suspended: NCCL_SUSPEND_MEM releases nothing (ncclCommMemStats says so).
    comm->suspended.store(true, std::memory_order_release);
  });
}
NCCL_ALIAS(ncclCommSuspend)

NCCL_EXPORT ncclResult_t ncclCommResume(ncclComm_t comm) {
  return guarded("ncclCommResume", [&] {
    requireComm(comm);
    if (!comm->suspended.exchange(false, std::memory_order_acq_rel)) {
      throw UsageError("the communicator is not suspended");
    }
  });
}
NCCL_ALIAS(ncclCommResume)

NCCL_EXPORT ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  return guarded("ncclCommMemStats", [&] {
    requireComm(comm);
    if (value == nullptr) throw Error(ErrorCode::kInvalidArgument, "value is null");
    switch (stat) {
      case ncclStatGpuMemSuspend:
        *value = 0;  // nothing braid holds is released by a suspend
        return;
      case ncclStatGpuMemSuspended:
        *value = comm->suspended.load(std::memory_order_acquire) ? 1 : 0;
        return;
      case ncclStatGpuMemPersist:
      case ncclStatGpuMemTotal:
        throw UsageError("braid does not account its GPU memory per communicator");
    }
    throw Error(ErrorCode::kInvalidArgument,
                "statistic " + std::to_string(static_cast<int>(stat)) + " is not an ncclCommMemStat_t");
  });
}
NCCL_ALIAS(ncclCommMemStats)

NCCL_EXPORT ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  return guarded("ncclWinGetUserPtr", [&] {
    requireComm(comm);
    if (win == nullptr || outUserPtr == nullptr) throw Error(ErrorCode::kInvalidArgument, "win or outUserPtr is null");
    *outUserPtr = win->user;
  });
}
NCCL_ALIAS(ncclWinGetUserPtr)

// ---- Refused: one-sided signals, the device API (declared in nccl_device/core.h; their arguments are not read),
// the parameter system (braid's settings are its BRAID_* variables).

NCCL_EXPORT ncclResult_t ncclPutSignal(const void*, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int,
                                       unsigned int, ncclComm_t, cudaStream_t) {
  return notServed("ncclPutSignal", "a one-sided put with a signal");
}
NCCL_ALIAS(ncclPutSignal)

NCCL_EXPORT ncclResult_t ncclSignal(int, int, int, unsigned int, ncclComm_t, cudaStream_t) {
  return notServed("ncclSignal", "a one-sided signal");
}
NCCL_ALIAS(ncclSignal)

NCCL_EXPORT ncclResult_t ncclWaitSignal(int, ncclWaitSignalDesc_t*, ncclComm_t, cudaStream_t) {
  return notServed("ncclWaitSignal", "waiting for one-sided signals");
}
NCCL_ALIAS(ncclWaitSignal)

NCCL_EXPORT ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t, size_t, void**) {
  return notServed("ncclGetLsaMultimemDevicePointer", "NCCL's device API");
}
NCCL_ALIAS(ncclGetLsaMultimemDevicePointer)

NCCL_EXPORT ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t, size_t, int, void**) {
  return notServed("ncclGetPeerDevicePointer", "NCCL's device API");
}
NCCL_ALIAS(ncclGetPeerDevicePointer)

#define BRAID_NCCL_PARAM_REFUSED(name, ...)                                                      \
  NCCL_EXPORT ncclResult_t name(__VA_ARGS__) {                                                   \
    return notServed(#name, "NCCL's parameter system (braid's settings are BRAID_* variables)"); \
  }                                                                                              \
  NCCL_ALIAS(name)

BRAID_NCCL_PARAM_REFUSED(ncclParamBind, ncclParamHandle_t*, const char*)
BRAID_NCCL_PARAM_REFUSED(ncclParamGetI8, ncclParamHandle_t, int8_t*)
BRAID_NCCL_PARAM_REFUSED(ncclParamGetI16, ncclParamHandle_t, int16_t*)
BRAID_NCCL_PARAM_REFUSED(ncclParamGetI32, ncclParamHandle_t, int32_t*)
BRAID_NCCL_PARAM_REFUSED(ncclParamGetI64, ncclParamHandle_t, int64_t*)
BRAID_NCCL_PARAM_REFUSED(ncclParamGetU8, ncclParamHandle_t, uint8_t*)
BRAID_NCCL_PARAM_REFUSED(ncclParamGetU16, ncclParamHandle_t, uint16_t*)
BRAID_NCCL_PARAM_REFUSED(ncclParamGetU32, ncclParamHandle_t, uint32_t*)
BRAID_NCCL_PARAM_REFUSED(ncclParamGetU64, ncclParamHandle_t, uint64_t*)
BRAID_NCCL_PARAM_REFUSED(ncclParamGetStr, ncclParamHandle_t, const char**)
BRAID_NCCL_PARAM_REFUSED(ncclParamGet, ncclParamHandle_t, void*, int, int*)
BRAID_NCCL_PARAM_REFUSED(ncclParamGetParameter, const char*, const char**, int*)
BRAID_NCCL_PARAM_REFUSED(ncclParamGetAllParameterKeys, const char***, int*)

NCCL_EXPORT void ncclParamDumpAll(void) {
  std::fprintf(stderr, "braid: NCCL's parameter system is not served; braid's settings are BRAID_* variables\n");
}
NCCL_ALIAS(ncclParamDumpAll)

#endif  // NCCL 2.30
