// A ring allgather over the network transport, in the three parts a caller may spread out: post every receive, send
// this rank's block segment by segment, then forward what arrives and wait for all of it. NetEngine::ringAllgather runs
// them back to back; the ring allreduce sends its own block's segments inside its reduce-scatter's last step, each
// as soon as it is final.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/host/net/net_call.hpp"
#include "algorithms/host/net/segments.hpp"
#include "algorithms/patterns/ring.hpp"

namespace braid::host {

class RingGather {
 public:
  using BlockFn = std::function<patterns::Block(int)>;

  /// Over `buf`, cut into `blocks` of `elemBytes`-byte elements; message ids count from `stepBase`.
  RingGather(NetCall& call, std::byte* buf, const BlockFn& blocks, std::size_t elemBytes, std::uint32_t stepBase);

  std::size_t segments() const { return seg_.perBlock; }
  /// Every block lands in its own place, so all receives are posted at once.
  void postReceives();
  /// Segment `j` of this rank's block (the allgather's step 0), once it is in place.
  void sendOwn(std::size_t j);
  /// Forwards each segment as it arrives (`landed`, may be empty, runs for each once it is in place, in order) and
  /// waits for every message of the call.
  void finish(const std::function<void(const patterns::Block&)>& landed = {});

 private:
  std::uint32_t id(int step, std::size_t j) const {
    return stepBase_ + static_cast<std::uint32_t>(static_cast<std::size_t>(step) * seg_.perBlock + j);
  }
  void send(int step, std::size_t j);

  NetCall& call_;
  std::byte* buf_;
  BlockFn blocks_;  // a copy: a lambda passed in may be a temporary
  std::size_t esz_;
  std::uint32_t stepBase_;
  patterns::Ring ring_;
  Segmentation seg_;
  std::vector<transport::NetOp*> recvs_;
};

}  // namespace braid::host
