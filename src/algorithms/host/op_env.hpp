// What an algorithm needs to know about the call it runs: who it is for errors, and how long and how it may wait.
#pragma once

#include <functional>

#include "base/deadline.hpp"
#include "braid/types.hpp"

namespace braid::host {

struct OpEnv {
  ErrorContext context;  // rank, op name, sequence number
  Deadline deadline;
  long spinMicros = 100;
  bool yieldWhileSpinning = false;
  /// Throws when the call must stop waiting (communicator aborted). Called between sleeps.
  std::function<void()> check;
};

}  // namespace braid::host
