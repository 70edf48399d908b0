// When a receive from any source stops waiting for peers that are gone. It waits on every peer at once. A peer that
// left after its last call (it destroyed its communicator) fails nothing: another may still send the message. One
// that failed (its process died, it aborted, its communicator broke) may have been the sender: the receive fails with
// PeerLost naming it, as a receive from that peer would. Once every peer is gone, whatever the reason, no rank is
// left to send the message.
#pragma once

#include <functional>
#include <string>

#include "base/error.hpp"

namespace braid::host {

/// Throws PeerLost when a receive from any source with `tag` can no longer count on its message (above).
/// `failure(p)`: why peer p is gone, "" while it is not; `left(p)`: it left after its last call; `arrived()`: a
/// message the receive may take has arrived. That is asked after the peers' states were read, never before: a peer
/// sends its last message and then leaves, so a message asked for first may arrive, its sender leave, and the
/// receive fail though its message is there.
void checkAnySourcePeers(int rank, int size, int tag, const CallContext& context,
                         const std::function<std::string(int)>& failure, const std::function<bool(int)>& left,
                         const std::function<bool()>& arrived);

}  // namespace braid::host
