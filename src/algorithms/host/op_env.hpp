// What an algorithm needs to know about the call it runs: who it is for errors, and how long and how it may wait.
#pragma once

#include <functional>
#include <optional>

#include "base/deadline.hpp"
#include "braid/types.hpp"

namespace braid::host {

struct OpEnv {
  ErrorContext context;  // rank, op name, sequence number
  double timeoutSeconds = 600;
  /// Set when the call first has to sleep; from then on its waits share it (see transport::WaitPolicy).
  mutable std::optional<Deadline> deadline;
  long spinMicros = 100;
  bool yieldWhileSpinning = false;
  /// Throws when the call must stop waiting (communicator aborted). Called between sleeps.
  std::function<void()> check;
};

}  // namespace braid::host
