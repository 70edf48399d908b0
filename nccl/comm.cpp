#include "comm.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>

#include "errors.hpp"

namespace braid::nccl {

namespace {

// NCCL_CONFIG_INITIALIZER's magic: a config whose magic differs was never initialised.
constexpr unsigned kConfigMagic = 0xcafebeef;

int currentDevice() {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return device;
}

}  // namespace

Creation creationOf(const ncclConfig_t* config) {
  Creation how;
  if (config == nullptr) return how;
  // The first three fields are the same in every ncclConfig_t version: size, magic, version.
  if (config->magic != kConfigMagic || config->size < offsetof(ncclConfig_t, blocking) + sizeof(int)) {
    throw Error(ErrorCode::kInvalidArgument,
                "the ncclConfig_t was not initialised with NCCL_CONFIG_INITIALIZER (size " +
                    std::to_string(config->size) + ", magic " + std::to_string(config->magic) + ")");
  }
  if (config->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (config->blocking != 0 && config->blocking != 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  "ncclConfig_t.blocking is " + std::to_string(config->blocking) + ", not 0 or 1");
    }
    how.blocking = config->blocking == 1;
  }
  return how;
}

ncclResult_t startCreation(ncclComm_t* out, int rank, int size, const Creation& how,
                           std::function<std::unique_ptr<Communicator>(std::shared_ptr<AbortHandle>)> make,
                           const char* function) {
  if (out == nullptr) throw Error(ErrorCode::kInvalidArgument, "the ncclComm_t pointer is null");
  *out = nullptr;
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(rank) + " of " + std::to_string(size) + " ranks is out of range");
  }
  auto object = std::make_unique<ncclComm>();
  object->rank = rank;
  object->size = size;
  object->device = currentDevice();
  if (how.blocking) {
    object->comm = make(object->abort);
    object->created = true;
    *out = object.release();
    return ncclSuccess;
  }
  // Non-blocking: the caller polls ncclCommGetAsyncError until it stops saying ncclInProgress.
  ncclComm* comm = object.get();
  comm->creating = std::thread([comm, make = std::move(make), function] {
    if (comm->device >= 0) (void)cudaSetDevice(comm->device);
    // The failure keeps braid's code, so that every later call reports it as the blocking creation would have.
    try {
      comm->comm = make(comm->abort);
    } catch (const Error& e) {
      comm->failureCode = e.code();
      comm->failure = std::string(function) + ": " + e.what();
    } catch (const std::exception& e) {
      comm->failure = std::string(function) + ": " + e.what();
    }
    comm->created.store(true, std::memory_order_release);
  });
  *out = object.release();
  return ncclInProgress;
}

Communicator& communicatorOf(ncclComm_t comm) {
  if (comm == nullptr) throw Error(ErrorCode::kInvalidArgument, "the communicator is null");
  if (comm->creating.joinable()) comm->creating.join();
  if (comm->comm == nullptr) {
    throw Error(comm->failureCode, "the communicator was never made: " + comm->failure);
  }
  return *comm->comm;
}

ncclResult_t stateOf(ncclComm_t comm) {
  if (!comm->created.load(std::memory_order_acquire)) return ncclInProgress;
  if (comm->comm == nullptr) return fail(resultOf(comm->failureCode), "ncclCommGetAsyncError", comm->failure);
  if (std::optional<Error> error = comm->comm->asyncError()) {
    return fail(resultOf(error->code()), "ncclCommGetAsyncError", error->what());
  }
  return ncclSuccess;
}

void destroy(ncclComm_t comm, bool abort) {
  if (comm == nullptr) return;
  if (abort) {
    comm->abort->abort();  // also ends a creation still running
    if (comm->created.load(std::memory_order_acquire) && comm->comm) comm->comm->abort();
  }
  if (comm->creating.joinable()) comm->creating.join();
  // Calls of other threads end within milliseconds of an abort; without one, destroying a communicator in use is
  // the caller's error, as in NCCL, and this waits for it the same way.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (comm->running.load(std::memory_order_acquire) > 0) {
    if (std::chrono::steady_clock::now() > deadline) return;  // leaked: freeing it would crash its callers
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  delete comm;
}

}  // namespace braid::nccl
