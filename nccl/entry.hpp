// What the files of entry points share: how an entry point is exported, with its pncclX alias, and the checks of
// a communicator handle.
#pragma once

#include <nccl.h>

#include "braid/braid.hpp"
#include "comm.hpp"
#include "errors.hpp"

#define NCCL_EXPORT extern "C" __attribute__((visibility("default")))
// pncclX: the profiling-interface alias NCCL exports beside every ncclX.
#define NCCL_ALIAS(name) NCCL_EXPORT __attribute__((alias(#name))) decltype(name) p##name;

/// nccl.h's window handle points to this (and ncclCommRegister's handle, whose registration stays empty).
struct ncclWindow_vidmem {
  braid::BufferRegistration registration;
  void* user = nullptr;  ///< the registered buffer, as the caller passed it
};

namespace braid::nccl {

inline ncclComm_t requireComm(ncclComm_t comm) {
  if (comm == nullptr) throw Error(ErrorCode::kInvalidArgument, "the communicator is null");
  return comm;
}

/// A communicator that may take calls: not null, not suspended.
inline ncclComm_t requireUsable(ncclComm_t comm) {
  if (requireComm(comm)->suspended.load(std::memory_order_acquire)) {
    throw UsageError("the communicator is suspended (ncclCommSuspend): ncclCommResume it first");
  }
  return comm;
}

}  // namespace braid::nccl
