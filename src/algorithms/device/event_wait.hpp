// The host waiting for work it queued on a stream, without cudaEventSynchronize's unbounded block: a wait that ends
// when the call is aborted, a peer is lost or the call's timeout passes.
#pragma once

#include <cuda_runtime_api.h>

#include "algorithms/op_env.hpp"

namespace braid::device {

/// Returns once `event` has completed. Polls cudaEventQuery, back to back for env.spinMicros, then every 20 us;
/// between polls checkCall(env) may end the wait (Aborted, PeerLost, ...), and past the call's deadline
/// (env.deadline, set here if no wait of the call set it yet) it fails with Timeout naming `what`.
void waitForEvent(cudaEvent_t event, const OpEnv& env, const char* what);

}  // namespace braid::device
