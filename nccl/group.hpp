// ncclGroupStart/ncclGroupEnd: calls made between them on this thread are deferred and run together at the
// outermost end, so that one thread can drive several communicators (each rank's call would otherwise wait for the
// others) and point-to-point calls are posted together (no send waits for a receive posted after it).
#pragma once

#include <nccl.h>

#include <functional>
#include <optional>

#include "braid/braid.hpp"

namespace braid::nccl {

/// One deferred call: how to run it on the caller's thread, and how to start it on the communicator's own thread.
/// Point-to-point calls carry their operation instead: those of one communicator go together as one group.
struct Deferred {
  ncclComm_t comm = nullptr;
  std::function<void(Communicator&)> run;
  std::function<Work(Communicator&)> start;
  std::optional<P2pOp> p2p;
  CUstream_st* stream = nullptr;
};

/// Whether this thread is inside ncclGroupStart .. ncclGroupEnd.
bool grouping();
void groupStart();
/// Ends one level of nesting. At the outermost: waits for the creations started in the group, then runs the
/// deferred calls (the calls of one communicator on this thread; of several, each on its communicator's thread,
/// waiting for all); with `simulate`, drops them instead. Throws the first failure, after every call ended.
/// InvalidUsage outside a group.
void groupEnd(bool simulate);
void defer(Deferred call);
/// A communicator being created inside the group: groupEnd waits for it.
void deferCreation(ncclComm_t comm);

}  // namespace braid::nccl
