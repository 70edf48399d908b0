// NCCL's host API on braid, its communicators: ids, creation and its ends, queries, memory, registration, reduction
// operators and errors (the calls and groups are in calls.cpp, NCCL 2.30's additions in entry_points_2_30.cpp).
// Every function is exported with its pncclX alias and turns failures into ncclResult_t with braid's message kept
// for ncclGetLastError (errors.hpp).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm.hpp"
#include "entry.hpp"
#include "errors.hpp"
#include "group.hpp"
#include "types.hpp"

namespace braid::nccl {
namespace {

// NCCL's variables that have a braid meaning, for programs configured for NCCL: each sets braid's own only where the
// job did not set that one. Read once, before the first communicator.
void adoptNcclEnvironment() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto adopt = [](const char* braid, const char* value) {
      if (value != nullptr) ::setenv(braid, value, 0);  // 0: the job's own BRAID_* wins
    };
    adopt("BRAID_IFNAME", std::getenv("NCCL_SOCKET_IFNAME"));
    adopt("BRAID_HOST_ID", std::getenv("NCCL_HOSTID"));
    if (const char* debug = std::getenv("NCCL_DEBUG"); debug != nullptr) {
      const std::string level(debug);
      adopt("BRAID_LOG", level == "INFO" || level == "TRACE" ? "info" : level == "WARN" ? "warn" : nullptr);
    }
  });
}

ncclResult_t createRank(const char* function, ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                        const ncclConfig_t* config) {
  return guarded(function, [&] {
    adoptNcclEnvironment();
    Creation how = creationOf(config);
    // Inside a group the ranks of several communicators may be made by one thread: each creation runs on its own
    // thread and the group's end waits for them all.
    const bool inGroup = grouping();
    if (inGroup) how.blocking = false;
    UniqueId braidId;
    static_assert(sizeof braidId.bytes == sizeof id.internal, "a braid id fills an ncclUniqueId");
    std::memcpy(braidId.bytes, id.internal, sizeof braidId.bytes);
    const ncclResult_t result = startCreation(
        out, rank, nranks, how,
        [braidId, rank, nranks](std::shared_ptr<AbortHandle> abort) {
          return Communicator::create(braidId, rank, nranks, std::move(abort));
        },
        function);
    if (inGroup) {
      deferCreation(*out);
      return ncclSuccess;
    }
    return result;
  });
}

}  // namespace
}  // namespace braid::nccl

using namespace braid;        // NOLINT: the entry points below are all this file is
using namespace braid::nccl;  // NOLINT

NCCL_EXPORT ncclResult_t ncclGetVersion(int* version) {
  return guarded("ncclGetVersion", [&] {
    if (version == nullptr) throw Error(ErrorCode::kInvalidArgument, "version is null");
    *version = NCCL_VERSION_CODE;
  });
}
NCCL_ALIAS(ncclGetVersion)

NCCL_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with BRAID_LOG=info for details)";
    case ncclSystemError:
      return "unhandled system error (run with BRAID_LOG=info for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the braid developers";
    case ncclInvalidArgument:
      return "invalid argument (run with BRAID_LOG=info for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with BRAID_LOG=info for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}
NCCL_ALIAS(ncclGetErrorString)

NCCL_EXPORT const char* ncclGetLastError(ncclComm_t /*comm*/) { return lastError(); }
NCCL_ALIAS(ncclGetLastError)

// Deprecated in nccl.h and declared there with that attribute, which its definition and alias would repeat. 2.30's
// header makes it an empty macro unless NCCL_OS_LINUX is defined, but NCCL's Linux library still exports it.
#ifdef ncclResetDebugInit
#undef ncclResetDebugInit
#undef pncclResetDebugInit
extern "C" void ncclResetDebugInit();
extern "C" void pncclResetDebugInit();
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
// braid reads its log level once per process, at its first log line: there is nothing to reload.
NCCL_EXPORT void ncclResetDebugInit() {}
NCCL_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop

NCCL_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return guarded("ncclGetUniqueId", [&] {
    if (uniqueId == nullptr) throw Error(ErrorCode::kInvalidArgument, "uniqueId is null");
    adoptNcclEnvironment();
    const UniqueId id = Communicator::uniqueId();
    std::memcpy(uniqueId->internal, id.bytes, sizeof id.bytes);
  });
}
NCCL_ALIAS(ncclGetUniqueId)

NCCL_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return createRank("ncclCommInitRank", comm, nranks, commId, rank, nullptr);
}
NCCL_ALIAS(ncclCommInitRank)

NCCL_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                ncclConfig_t* config) {
  return createRank("ncclCommInitRankConfig", comm, nranks, commId, rank, config);
}
NCCL_ALIAS(ncclCommInitRankConfig)

NCCL_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                  ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || commIds == nullptr) {
    return fail(ncclInvalidArgument, "ncclCommInitRankScalable",
                "needs at least one unique id (nId " + std::to_string(nId) + ")");
  }
  // braid's rendezvous serves every rank from the first id's address.
  return createRank("ncclCommInitRankScalable", newcomm, nranks, commIds[0], myrank, config);
}
NCCL_ALIAS(ncclCommInitRankScalable)

NCCL_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  return guarded("ncclCommInitAll", [&] {
    if (comms == nullptr || ndev < 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  "needs an array of ndev >= 1 communicators (ndev " + std::to_string(ndev) + ")");
    }
    adoptNcclEnvironment();
    const UniqueId id = Communicator::uniqueId();
    // One rank per device, each made on a thread of its own with its device current.
    std::vector<ncclResult_t> results(static_cast<std::size_t>(ndev), ncclSuccess);
    std::vector<std::string> errors(static_cast<std::size_t>(ndev));
    std::vector<std::thread> threads;
    for (int i = 0; i < ndev; ++i) {
      threads.emplace_back([&, i] {
        const auto at = static_cast<std::size_t>(i);
        results[at] = guarded("ncclCommInitAll", [&] {
          const int device = devlist != nullptr ? devlist[i] : i;
          const cudaError_t set = cudaSetDevice(device);
          if (set != cudaSuccess) {
            (void)cudaGetLastError();
            throw Error(ErrorCode::kInvalidArgument,
                        "cannot use CUDA device " + std::to_string(device) + ": " + cudaGetErrorString(set));
          }
          (void)startCreation(
              &comms[i], i, ndev, Creation{},
              [&id, i, ndev](std::shared_ptr<AbortHandle> abort) {
                return Communicator::create(id, i, ndev, std::move(abort));
              },
              "ncclCommInitAll");
        });
        if (results[at] != ncclSuccess) errors[at] = lastError();
      });
    }
    for (std::thread& t : threads) t.join();
    for (int i = 0; i < ndev; ++i) {
      const auto at = static_cast<std::size_t>(i);
      if (results[at] == ncclSuccess) continue;
      for (int j = 0; j < ndev; ++j) {
        destroy(comms[j], true);
        comms[j] = nullptr;
      }
      return fail(results[at], "ncclCommInitAll", "device " + std::to_string(i) + ": " + errors[at]);
    }
    return ncclSuccess;
  });
}
NCCL_ALIAS(ncclCommInitAll)

NCCL_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  // braid's calls have handed their work to the stream (device) or finished (host) when they return: nothing is
  // left to flush once the communicator exists.
  return guarded("ncclCommFinalize", [&] { (void)communicatorOf(comm); });
}
NCCL_ALIAS(ncclCommFinalize)

NCCL_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return guarded("ncclCommDestroy", [&] { destroy(comm, false); });
}
NCCL_ALIAS(ncclCommDestroy)

NCCL_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return guarded("ncclCommAbort", [&] { destroy(comm, true); });
}
NCCL_ALIAS(ncclCommAbort)

// NCCL's device API (nccl_device.h, from 2.28): its host entries are refused by name. torch imports the two below
// from 2.28's headers on, whether or not this build's nccl.h names them, so they are always here.
NCCL_EXPORT ncclResult_t ncclDevCommCreate(ncclComm_t, const void*, void*) {
  return notServed("ncclDevCommCreate", "NCCL's device API");
}
NCCL_ALIAS(ncclDevCommCreate)

NCCL_EXPORT ncclResult_t ncclDevCommDestroy(ncclComm_t, const void*) {
  return notServed("ncclDevCommDestroy", "NCCL's device API");
}
NCCL_ALIAS(ncclDevCommDestroy)

#ifdef NCCL_REVOKE_DEFAULT  // an nccl.h that declares ncclCommRevoke defines it (2.28.3's has neither)
NCCL_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return guarded("ncclCommRevoke", [&] {
    requireComm(comm);
    if (revokeFlags != NCCL_REVOKE_DEFAULT) {
      throw Error(ErrorCode::kInvalidArgument, "revokeFlags is " + std::to_string(revokeFlags) + ", not 0");
    }
    // Calls running or queued end with an error, later ones fail; the peers lose this rank.
    communicatorOf(comm).abort();
  });
}
NCCL_ALIAS(ncclCommRevoke)
#endif

NCCL_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  return guarded("ncclCommSplit", [&] {
    requireComm(comm);
    if (newcomm == nullptr) throw Error(ErrorCode::kInvalidArgument, "newcomm is null");
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
      throw Error(ErrorCode::kInvalidArgument, "color " + std::to_string(color) + " is negative");
    }
    (void)creationOf(config);  // validated; the new communicator is made by the time split returns
    Communicator& parent = communicatorOf(comm);
    *newcomm = nullptr;
    std::unique_ptr<Communicator> made =
        parent.split(color == NCCL_SPLIT_NOCOLOR ? Communicator::kNoColor : color, key);
    if (!made) return ncclSuccess;
    const int rank = made->rank();
    const int size = made->size();
    auto holder = std::make_shared<std::unique_ptr<Communicator>>(std::move(made));
    return startCreation(
        newcomm, rank, size, Creation{}, [holder](std::shared_ptr<AbortHandle>) { return std::move(*holder); },
        "ncclCommSplit");
  });
}
NCCL_ALIAS(ncclCommSplit)

NCCL_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                        ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return guarded("ncclCommShrink", [&] {
    requireComm(comm);
    if (newcomm == nullptr) throw Error(ErrorCode::kInvalidArgument, "newcomm is null");
    if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
      throw Error(ErrorCode::kInvalidArgument, "excludeRanksCount is " + std::to_string(excludeRanksCount) + " with " +
                                                   (excludeRanksList ? "a" : "no") + " list");
    }
    (void)creationOf(config);
    *newcomm = nullptr;
    std::vector<bool> excluded(static_cast<std::size_t>(comm->size), false);
    for (int i = 0; i < excludeRanksCount; ++i) {
      const int r = excludeRanksList[i];
      if (r < 0 || r >= comm->size) {
        throw Error(ErrorCode::kInvalidArgument,
                    "excluded rank " + std::to_string(r) + " is not a rank of " + std::to_string(comm->size));
      }
      excluded[static_cast<std::size_t>(r)] = true;
    }
    if (excluded[static_cast<std::size_t>(comm->rank)]) {
      throw Error(ErrorCode::kInvalidArgument, "rank " + std::to_string(comm->rank) + " excludes itself");
    }
    std::vector<int> survivors;
    for (int r = 0; r < comm->size; ++r) {
      if (!excluded[static_cast<std::size_t>(r)]) survivors.push_back(r);
    }
    Communicator& parent = communicatorOf(comm);
    // After a failure (NCCL_SHRINK_ABORT) the survivors find each other without the parent's transport; otherwise
    // the listed ranks form a subgroup over it.
    std::unique_ptr<Communicator> made =
        (shrinkFlags & NCCL_SHRINK_ABORT) != 0 ? parent.shrink() : parent.subgroup(survivors);
    if (made->size() != static_cast<int>(survivors.size())) {
      throw Error(ErrorCode::kMismatch, "the survivors are " + std::to_string(made->size()) + " ranks, not the " +
                                            std::to_string(survivors.size()) + " left by the excluded ones");
    }
    const int rank = made->rank();
    const int size = made->size();
    auto holder = std::make_shared<std::unique_ptr<Communicator>>(std::move(made));
    return startCreation(
        newcomm, rank, size, Creation{}, [holder](std::shared_ptr<AbortHandle>) { return std::move(*holder); },
        "ncclCommShrink");
  });
}
NCCL_ALIAS(ncclCommShrink)

NCCL_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return guarded("ncclCommGetAsyncError", [&] {
    requireComm(comm);
    if (asyncError == nullptr) throw Error(ErrorCode::kInvalidArgument, "asyncError is null");
    *asyncError = stateOf(comm);
  });
}
NCCL_ALIAS(ncclCommGetAsyncError)

NCCL_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return guarded("ncclCommCount", [&] {
    requireComm(comm);
    if (count == nullptr) throw Error(ErrorCode::kInvalidArgument, "count is null");
    *count = comm->size;
  });
}
NCCL_ALIAS(ncclCommCount)

NCCL_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return guarded("ncclCommCuDevice", [&] {
    requireComm(comm);
    if (device == nullptr) throw Error(ErrorCode::kInvalidArgument, "device is null");
    if (comm->device < 0) throw Error(ErrorCode::kAborted, "the communicator was made where no CUDA device was");
    *device = comm->device;
  });
}
NCCL_ALIAS(ncclCommCuDevice)

NCCL_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return guarded("ncclCommUserRank", [&] {
    requireComm(comm);
    if (rank == nullptr) throw Error(ErrorCode::kInvalidArgument, "rank is null");
    *rank = comm->rank;
  });
}
NCCL_ALIAS(ncclCommUserRank)

NCCL_EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return guarded("ncclMemAlloc", [&]() -> ncclResult_t {
    if (ptr == nullptr) throw Error(ErrorCode::kInvalidArgument, "ptr is null");
    const cudaError_t e = cudaMalloc(ptr, size);
    if (e == cudaSuccess) return ncclSuccess;
    (void)cudaGetLastError();
    return fail(ncclUnhandledCudaError, "ncclMemAlloc",
                "cudaMalloc(" + std::to_string(size) + "): " + cudaGetErrorString(e));
  });
}
NCCL_ALIAS(ncclMemAlloc)

NCCL_EXPORT ncclResult_t ncclMemFree(void* ptr) {
  return guarded("ncclMemFree", [&]() -> ncclResult_t {
    const cudaError_t e = cudaFree(ptr);
    if (e == cudaSuccess) return ncclSuccess;
    (void)cudaGetLastError();
    return fail(ncclUnhandledCudaError, "ncclMemFree", std::string("cudaFree: ") + cudaGetErrorString(e));
  });
}
NCCL_ALIAS(ncclMemFree)

// ncclCommRegister is local to a rank in NCCL, braid's registration collective: a local registration is accepted
// and changes nothing (calls run as on unregistered memory). Windows are collective in both and register for real.
NCCL_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return guarded("ncclCommRegister", [&] {
    requireComm(comm);
    if (handle == nullptr) throw Error(ErrorCode::kInvalidArgument, "handle is null");
    if (buff == nullptr && size > 0) throw Error(ErrorCode::kInvalidArgument, "buff is null");
    *handle = new ncclWindow_vidmem{};
  });
}
NCCL_ALIAS(ncclCommRegister)

NCCL_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return guarded("ncclCommDeregister", [&] {
    requireComm(comm);
    delete static_cast<ncclWindow_vidmem*>(handle);
  });
}
NCCL_ALIAS(ncclCommDeregister)

NCCL_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                int /*winFlags*/) {
  return guarded("ncclCommWindowRegister", [&] {
    requireComm(comm);
    if (win == nullptr) throw Error(ErrorCode::kInvalidArgument, "win is null");
    auto window = std::make_unique<ncclWindow_vidmem>();
    window->user = buff;
    window->registration = communicatorOf(comm).registerBuffer(buff, size);
    *win = window.release();
  });
}
NCCL_ALIAS(ncclCommWindowRegister)

NCCL_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return guarded("ncclCommWindowDeregister", [&] {
    requireComm(comm);
    if (win == nullptr) throw Error(ErrorCode::kInvalidArgument, "win is null");
    std::unique_ptr<ncclWindow_vidmem> window(win);
    communicatorOf(comm).deregisterBuffer(window->registration);
  });
}
NCCL_ALIAS(ncclCommWindowDeregister)

NCCL_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                  ncclScalarResidence_t residence, ncclComm_t comm) {
  return guarded("ncclRedOpCreatePreMulSum", [&] {
    requireComm(comm);
    if (op == nullptr || scalar == nullptr) throw Error(ErrorCode::kInvalidArgument, "op or scalar is null");
    if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
      throw Error(ErrorCode::kInvalidArgument,
                  "residence " + std::to_string(static_cast<int>(residence)) + " is not an ncclScalarResidence_t");
    }
    (void)dataTypeOf(datatype);
    ncclComm::PremulOp made;
    made.live = true;
    made.type = datatype;
    made.onDevice = residence == ncclScalarDevice;
    if (made.onDevice) {
      made.device = scalar;
    } else {
      made.scale = scalarValue(scalar, datatype);
    }
    std::lock_guard lock(comm->opsMu);
    std::size_t index = 0;
    while (index < comm->ops.size() && comm->ops[index].live) ++index;
    if (index + static_cast<std::size_t>(ncclNumOps) > static_cast<std::size_t>(ncclMaxRedOp)) {
      throw Error(ErrorCode::kInvalidArgument, "too many premul_sum operators on this communicator");
    }
    if (index == comm->ops.size()) comm->ops.push_back(made);
    comm->ops[index] = made;
    *op = static_cast<ncclRedOp_t>(static_cast<int>(ncclNumOps) + static_cast<int>(index));
  });
}
NCCL_ALIAS(ncclRedOpCreatePreMulSum)

NCCL_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return guarded("ncclRedOpDestroy", [&] {
    requireComm(comm);
    std::lock_guard lock(comm->opsMu);
    const long index = static_cast<long>(op) - static_cast<long>(ncclNumOps);
    if (index < 0 || static_cast<std::size_t>(index) >= comm->ops.size() ||
        !comm->ops[static_cast<std::size_t>(index)].live) {
      throw Error(ErrorCode::kInvalidArgument, "operator " + std::to_string(static_cast<int>(op)) +
                                                   " was not made by ncclRedOpCreatePreMulSum on this communicator");
    }
    comm->ops[static_cast<std::size_t>(index)].live = false;
  });
}
NCCL_ALIAS(ncclRedOpDestroy)
