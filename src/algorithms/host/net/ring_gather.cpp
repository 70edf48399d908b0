// See ring_gather.hpp.
#include "algorithms/host/net/ring_gather.hpp"

namespace braid::host {

RingGather::RingGather(NetCall& call, std::byte* buf, const BlockFn& blocks, std::size_t elemBytes,
                       std::uint32_t stepBase)
    : call_(call),
      buf_(buf),
      blocks_(blocks),
      esz_(elemBytes),
      stepBase_(stepBase),
      ring_(call.rank(), call.size()),
      seg_(segmentationOf(blocks, call.size(), elemBytes)) {}

void RingGather::postReceives() {
  recvs_.resize(static_cast<std::size_t>(ring_.steps()) * seg_.perBlock);
  for (int t = 0; t < ring_.steps(); ++t) {
    const patterns::Block blk = blocks_(ring_.allgatherRecvBlock(t));
    for (std::size_t j = 0; j < seg_.perBlock; ++j) {
      const patterns::Block sg = segmentOf(blk, j, seg_.elems);
      recvs_[t * seg_.perBlock + j] = &call_.recv(ring_.prev(), id(t, j), buf_ + sg.offset * esz_, sg.count * esz_);
    }
  }
}

void RingGather::send(int step, std::size_t j) {
  const patterns::Block sg = segmentOf(blocks_(ring_.allgatherSendBlock(step)), j, seg_.elems);
  call_.send(ring_.next(), id(step, j), buf_ + sg.offset * esz_, sg.count * esz_);
}

void RingGather::sendOwn(std::size_t j) { send(0, j); }

void RingGather::finish(const std::function<void(const patterns::Block&)>& landed) {
  const int steps = ring_.steps();
  for (int t = 0; t < steps; ++t) {
    if (t + 1 == steps && !landed) break;  // the last step's blocks are only waited for, below
    const patterns::Block blk = blocks_(ring_.allgatherRecvBlock(t));
    for (std::size_t j = 0; j < seg_.perBlock; ++j) {
      call_.wait(*recvs_[t * seg_.perBlock + j]);
      if (landed) landed(segmentOf(blk, j, seg_.elems));
      if (t + 1 < steps) send(t + 1, j);  // forward what just arrived
    }
  }
  call_.waitAll();
}

}  // namespace braid::host
