// PMIx, loaded at run time: the process manager of Open MPI's mpirun (and of Slurm, PRRTE) tells the ranks of a job
// what rank 0 published, so they find its store without any address in the environment. libpmix is dlopen'ed,
// never linked: braid loads and runs where it is absent.
#pragma once

#include <string>

namespace braid::bootstrap::pmix {

/// "" when libpmix.so.2 can be loaded and has every function braid calls; else why not (dlerror's text).
/// Loads the library at most once per process.
std::string libraryUnavailableReason();

/// Rank 0 of this process's PMIx namespace publishes `value` (PMIx_Put, global scope, then PMIx_Commit); every rank
/// of the namespace fences with data collection and then reads rank 0's value, which it returns (rank 0 returns its
/// own). Every rank of the namespace must call this the same number of times: the n-th call of each process uses
/// the n-th key. `rank` is the caller's braid rank and must equal its PMIx rank. Waits at most `timeoutSeconds`
/// (passed to the PMIx server as PMIX_TIMEOUT). PMIx is initialised for the exchange and finalised after it.
/// Failures -> Unavailable naming the PMIx call and its status; never exits or aborts.
std::string shareFromRankZero(int rank, const std::string& value, double timeoutSeconds);

}  // namespace braid::bootstrap::pmix
