// What an algorithm needs to know about the call it runs: who it is for errors, and how long and how it may wait.
#pragma once

#include <atomic>
#include <functional>
#include <optional>

#include "base/deadline.hpp"
#include "base/error.hpp"
#include "braid/types.hpp"

namespace braid {

class P2pFeed;

struct OpEnv {
  CallContext context;  // rank, op name, sequence number
  double timeoutSeconds = 600;
  /// Set when the call first has to sleep; from then on its waits share it (see transport::WaitPolicy).
  mutable std::optional<Deadline> deadline;
  long spinMicros = 100;
  bool yieldWhileSpinning = false;
  /// Throws when the call must stop waiting. Called between sleeps.
  std::function<void()> check;
  /// How long each of those sleeps lasts on shared memory (0: transport::kSleepSliceMicros; a network transport's
  /// waits keep their own). A collective run inside a point-to-point group sleeps briefly: its check moves the
  /// group's messages (P2pFeed::interleave).
  long sliceMicros = 0;
  /// Set once the communicator is aborted (Communicator::abort, from any thread): waits end with Aborted.
  const std::atomic<bool>* aborted = nullptr;
  /// The call's CUDA stream (CallOptions::stream): device work is ordered on it, host work after it.
  CUstream_st* stream = nullptr;
  /// Point-to-point groups on host buffers: where later calls join the running group (p2p_feed.hpp). Null for
  /// everything else; an engine that stages buffers must not pass it on.
  P2pFeed* feed = nullptr;
};

/// What every wait runs between its sleeps: Aborted when the communicator was aborted, then env.check.
inline void checkCall(const OpEnv& env) {
  if (env.aborted && env.aborted->load(std::memory_order_acquire)) {
    throw Error(ErrorCode::kAborted, "the communicator was aborted", env.context);
  }
  if (env.check) env.check();
}

}  // namespace braid
