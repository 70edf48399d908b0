// Who this process is in the job and where rank 0's store is, from the environment of whichever launcher started it:
// braid's own variables (BRAID_*, read through Settings as declared knobs), then torchrun's, Open MPI mpirun's and
// Slurm srun's (read through a lookup, as they are not braid's to declare).
#pragma once

#include <functional>
#include <string>

#include "base/config.hpp"
#include "transport/tcp/socket.hpp"

namespace braid::bootstrap {

struct LaunchIdentity {
  std::string launcher = "braid";  // who set the environment: "braid", "torchrun", "mpirun" or "slurm"
  int rank = 0;
  int size = 1;
  int localRank = -1;  // this process's rank among the ranks of its host; -1: not given
  int localSize = -1;  // ranks on this host; -1: not given
  // Where the ranks reach rank 0's store. Empty (host "") when rootViaPmix: rank 0 picks it and publishes it.
  tcp::Address root;
  // Where rank 0's store listens: BRAID_ROOT_ADDR exactly when given; for a root derived from the launcher's host
  // names, every interface at root's port (a name such as MASTER_ADDR may resolve to 127.0.1.1 on its own host).
  tcp::Address bind;
  bool rootViaPmix = false;  // mpirun without BRAID_ROOT_ADDR: the store's address (and token) travel through PMIx
  // BRAID_TOKEN; else for torchrun and srun a job-unique (not secret) id, so that ranks of another job that dial the
  // same fixed port are refused rather than joined; "" under PMIx, where rank 0 publishes a random one.
  std::string token;
};

/// "" when PMIx can carry the root address (libpmix loadable), else why not. Tests pass their own.
using PmixProbe = std::function<std::string()>;

/// The launch identity, in this order of precedence (the first whose variables are present wins):
///  1. braid:    BRAID_RANK, BRAID_WORLD_SIZE, BRAID_ROOT_ADDR (required), BRAID_LOCAL_RANK;
///  2. torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR; torchrun's own store owns MASTER_PORT,
///               so rank 0 listens on MASTER_PORT + 1;
///  3. mpirun:   OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE; the root through PMIx when PMIX_RANK and
///               PMIX_NAMESPACE are set and libpmix loads, else BRAID_ROOT_ADDR is required;
///  4. slurm:    SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; the root is the first host of SLURM_STEP_NODELIST (else
///               SLURM_JOB_NODELIST) at BRAID_PORT.
/// BRAID_ROOT_ADDR, when set, overrides the derived root (and its bind address) in every case. BRAID_* values come
/// from `settings`; the launchers' from `env` (empty: the process environment). `pmixProbe` empty: really try
/// libpmix. InvalidArgument naming the variable and its value when one is missing or malformed.
/// True when the environment names this process's rank under one of the launchers readLaunchIdentity knows (the
/// same test, in the same order), so that fromEnvironment() would join a job rather than fail.
bool launcherPresent(const Settings& settings, const Settings::Lookup& env = {});

/// BRAID_TOKEN's form: empty, or at least 32 hex digits (a 128-bit secret). InvalidArgument saying which rule broke.
void checkJobToken(const std::string& token);

LaunchIdentity readLaunchIdentity(const Settings& settings, const Settings::Lookup& env = {},
                                  const PmixProbe& pmixProbe = {});

}  // namespace braid::bootstrap
