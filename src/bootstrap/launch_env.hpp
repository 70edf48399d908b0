// Who this process is in the job, from the launcher's environment (read through Settings, so every variable is
// a declared knob). torchrun, mpirun and srun forms arrive with the multi-host work.
#pragma once

#include <string>

#include "base/config.hpp"
#include "transport/tcp/socket.hpp"

namespace braid::bootstrap {

struct LaunchIdentity {
  int rank = 0;
  int size = 1;
  int localRank = -1;  // -1: not given
  tcp::Address root;
  std::string token;
};

/// BRAID_RANK, BRAID_WORLD_SIZE, BRAID_ROOT_ADDR (required), BRAID_LOCAL_RANK, BRAID_TOKEN (optional).
/// InvalidArgument naming the variable when one is missing or malformed.
LaunchIdentity readLaunchIdentity(const Settings& settings);

}  // namespace braid::bootstrap
