// Point-to-point calls over a network transport. The messages of each (peer, tag) are numbered in sending order and a
// receive names the one it takes, so each message has exactly one receive wherever it waits (MPI's ordering per
// sender and tag). A receive from any source cannot name its message until one arrives: it is held until the
// transport has begun receiving the next message with its tag from some peer (or this rank sent itself one), then
// takes that one. Receives with the same tag posted after it are held behind it, since its choice decides which
// message of that peer is theirs; everything else goes on meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "algorithms/host/net/net_call.hpp"
#include "algorithms/op_env.hpp"
#include "transport/net_transport.hpp"

namespace braid::host {

class NetPointToPoint {
 public:
  /// `spinMicros`: how long a wait serves the transport itself before it sleeps (BRAID_TCP_SPIN_US).
  NetPointToPoint(transport::NetTransport& net, long spinMicros) : net_(net), spinMicros_(spinMicros) {}

  /// Runs `ops` to completion, and with env.feed what joins them meanwhile, each reported to the feed once done.
  void run(std::span<const P2pOp> ops, const OpEnv& env);

 private:
  // An operation of this run: its feed index, and the transport's op once posted.
  struct Posted {
    std::size_t index;
    transport::NetOp* op;
  };
  struct Held {
    std::size_t index;
    P2pOp op;
  };

  /// Posts `op` (its peer known) on `call`; null when it completed at once (a message to or from itself).
  transport::NetOp* post(NetCall& call, const P2pOp& op, const OpEnv& env);
  /// A peer whose next message with `tag` has begun arriving (or this rank, when it sent itself one); -1: none.
  int arrivedFrom(int tag);

  transport::NetTransport& net_;
  const long spinMicros_;
  std::map<std::pair<int, int>, std::uint32_t> sent_;      // messages numbered per (peer, tag)
  std::map<std::pair<int, int>, std::uint32_t> received_;  // and the next one a receive takes
  std::multimap<int, std::vector<std::byte>> toSelf_;      // by tag, in send order
  int firstPeer_ = 0;  // where arrivedFrom starts looking, turning so that no peer starves the others
};

}  // namespace braid::host
