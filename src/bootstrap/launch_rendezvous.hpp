// Starting a job's bootstrap from its launcher's environment: who this rank is (launch_env), where rank 0's store
// is (given, derived from the launcher's host names, or published through PMIx), rank 0 serving it and every rank
// connected to it. Communicator::fromEnvironment() is this plus joining the communicator over the store.
#pragma once

#include <atomic>
#include <memory>

#include "base/config.hpp"
#include "bootstrap/launch_env.hpp"
#include "bootstrap/tcp_store.hpp"

namespace braid::bootstrap {

struct JobRendezvous {
  LaunchIdentity identity;                 // with root and token filled in, also when they came through PMIx
  std::unique_ptr<TcpStoreServer> server;  // rank 0 only; must outlive every rank's use of the store
  std::unique_ptr<TcpStoreClient> client;
};

/// Reads the identity (readLaunchIdentity(settings, env, pmixProbe)); rank 0 starts the store where the identity
/// says (or, through PMIx, on an ephemeral port of tcp::hostAddressForPeers(), then publishes that address and a
/// fresh token unless BRAID_TOKEN gives one); every rank, rank 0 included, connects and authenticates within
/// BRAID_TIMEOUT. Errors are braid::Error: InvalidArgument for the environment, Unavailable for PMIx, Timeout when
/// rank 0's store never answers.
/// `cancel`, when given and set from another thread, ends the wait for the store early (AbortHandle).
JobRendezvous rendezvousFromEnvironment(const Settings& settings, const Settings::Lookup& env = {},
                                        const PmixProbe& pmixProbe = {}, const std::atomic<bool>* cancel = nullptr);

}  // namespace braid::bootstrap
