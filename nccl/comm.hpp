// The object behind an ncclComm_t: a braid communicator, made at once or (non-blocking configurations) on a thread
// of its own, with what NCCL keeps per communicator (its CUDA device, its premul_sum operators).
#pragma once

#include <nccl.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.hpp"

/// nccl.h declares ncclComm_t as a pointer to this (opaque to callers).
struct ncclComm {
  /// An operator made by ncclRedOpCreatePreMulSum: its scalar, read now (host) or at each call (device).
  struct PremulOp {
    bool live = false;
    ncclDataType_t type = ncclFloat32;
    bool onDevice = false;
    const void* device = nullptr;  ///< ncclScalarDevice: where the scalar is read at each call
    double scale = 1.0;            ///< ncclScalarHostImmediate: the scalar, read at creation
  };

  int rank = -1;
  int size = 0;
  int device = -1;  ///< the CUDA device current when the communicator was made; -1 without one
  std::shared_ptr<braid::AbortHandle> abort = std::make_shared<braid::AbortHandle>();
  std::unique_ptr<braid::Communicator> comm;  ///< set once creation succeeded

  // Creation: `created` turns true when it ended, with `comm` set or `failure` saying why not.
  std::thread creating;
  std::atomic<bool> created{false};
  braid::ErrorCode failureCode = braid::ErrorCode::kInternal;
  std::string failure;

  std::mutex opsMu;
  std::vector<PremulOp> ops;

  std::atomic<bool> suspended{false};  ///< between ncclCommSuspend and ncclCommResume: no calls
  std::atomic<int> running{0};         ///< calls inside braid now (see braid::nccl::Use)
};

namespace braid::nccl {

/// How a communicator is made (ncclConfig_t's `blocking`; every other field is a hint braid does without).
struct Creation {
  bool blocking = true;
};

/// The settings in `config` (null: defaults). Throws InvalidArgument for a config not made from
/// NCCL_CONFIG_INITIALIZER (its size and magic), so callers built against older or newer nccl.h headers are read
/// through the fields both have.
Creation creationOf(const ncclConfig_t* config);

/// A communicator object whose braid communicator `make` creates, now or (non-blocking) on a thread; returns it
/// with ncclSuccess or ncclInProgress. `make` runs with the caller's CUDA device current.
ncclResult_t startCreation(ncclComm_t* out, int rank, int size, const Creation& how,
                           std::function<std::unique_ptr<Communicator>(std::shared_ptr<AbortHandle>)> make,
                           const char* function);

/// The braid communicator of `comm`, waiting for a non-blocking creation; throws InvalidArgument for a null handle
/// and the creation's own failure when it failed.
Communicator& communicatorOf(ncclComm_t comm);

/// ncclInProgress while a non-blocking creation runs, else its failure or the communicator's asynchronous error
/// (ncclSuccess when there is none). Never blocks.
ncclResult_t stateOf(ncclComm_t comm);

/// Marks a call running on a communicator for its lifetime, so that an ncclCommAbort from another thread (a
/// watchdog's) frees the object only after the call, which the abort ends, has left it.
class Use {
 public:
  explicit Use(ncclComm_t comm) : comm_(comm) { comm_->running.fetch_add(1, std::memory_order_acq_rel); }
  ~Use() { comm_->running.fetch_sub(1, std::memory_order_acq_rel); }
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;

 private:
  ncclComm_t comm_;
};

/// Ends `comm`'s object: aborts first when `abort`, waits for its creation and for the calls running on it, frees
/// it. An object whose calls have not left within 10 s after an abort is leaked rather than freed under them.
void destroy(ncclComm_t comm, bool abort);

}  // namespace braid::nccl
