// BRAID_COMPRESS=bf16: the ring allreduce of float32 sums and averages with bfloat16 on the wire: every
// partial sum is rounded to bfloat16 when it is sent and widened again to float32 when it arrives, so the ring moves
// half the bytes while every addition stays in float32.
//
// Error: each of the n - 1 reduce-scatter hops rounds a partial sum to bfloat16 (relative error at most 2^-9), and
// the allgather rounds the final sum once more, so an element's error is at most about (n + 1) * 2^-9 * sum|x_i|
// (tests/multirank/compression_test.cpp checks n * 2^-8 * sum|x_i|). Results are bitwise identical on every rank:
// the owner of a block keeps the bfloat16-rounded value it sends, and forwarded blocks travel unchanged.
#include <algorithm>

#include "algorithms/host/net/net_engine.hpp"
#include "algorithms/host/net/segments.hpp"
#include "algorithms/host/reduce_cpu.hpp"
#include "algorithms/patterns/ring.hpp"

namespace braid::host {

bool NetEngine::compresses(std::size_t count, DataType type, ReduceOp op) const {
  return policy_.compressBf16 && type == DataType::kFloat32 &&
         (op.kind == ReduceKind::kSum || op.kind == ReduceKind::kAvg) && size() > 1 && !direct(count * 4) &&
         !doubling(count * 4);
}

// Conversions go through reduce_cpu's vectorised per-ISA kernels (scalar loops here ran at a fraction of a 10 Gbit/s
// link's rate), fused: a received segment is widened, added, rounded (and for the owner widened back) in one pass,
// not four, because at 64 MiB this thread's passes over memory, not the link, set the pace. The allgather begins inside
// the reduce-scatter's last step: each segment of this rank's block goes out as soon as it is final, so the link never
// waits for the whole block to be rounded (a serial pass over 1/n of the data, as long as the whole transfer at 10
// Gbit/s). The input is read in place (sums and averages are never scaled).
void NetEngine::compressedAllreduce(NetCall& call, const void* send, void* recv, std::size_t count, ReduceOp op) {
  const int n = size();
  auto* out = static_cast<float*>(recv);
  const auto* in = static_cast<const float*>(send);  // may be out (in place): each block is read before written
  // Blocks of whole 64-byte lines of float32, as the uncompressed ring cuts them.
  const BlockFn blocks = [&](int b) { return patterns::alignedBlockOf(count, n, b, 16); };
  const patterns::Ring ring(rank(), n);
  const Segmentation seg = segmentationOf(blocks, n, sizeof(std::uint16_t));  // segments of wire bytes
  const std::size_t maxBlock = seg.maxBlock;
  const std::size_t nseg = seg.perBlock;
  const int steps = ring.steps();
  // Wire buffers: a region per reduce-scatter step for what is sent (sends stay in flight until the end), two for
  // what arrives (a step's data is reduced before step + 2 lands there), and the whole message for the allgather.
  const std::size_t sendWords = static_cast<std::size_t>(steps) * maxBlock;
  const std::size_t recvWords = 2 * maxBlock;
  auto* sendWire =
      reinterpret_cast<std::uint16_t*>(wire_.ensure(*net_, (sendWords + recvWords + count) * sizeof(std::uint16_t)));
  std::uint16_t* recvWire = sendWire + sendWords;
  std::uint16_t* gatherWire = recvWire + recvWords;
  auto id = [&](std::uint32_t base, int s, std::size_t j) { return base + static_cast<std::uint32_t>(s * nseg + j); };

  // The allgather's receives first: they land in a wire buffer of their own, so a peer that starts its allgather
  // early finds them posted and nothing is kept aside.
  std::vector<transport::NetOp*> gathers(static_cast<std::size_t>(steps) * nseg);
  for (int t = 0; t < steps; ++t) {
    const patterns::Block blk = blocks(ring.allgatherRecvBlock(t));
    for (std::size_t j = 0; j < nseg; ++j) {
      const patterns::Block sg = segmentOf(blk, j, seg.elems);
      gathers[t * nseg + j] = &call.recv(ring.prev(), id(kSecondPhase, t, j), gatherWire + sg.offset, sg.count * 2);
    }
  }
  // Forwards segment j of the block the allgather sends at step t (step 0: this rank's own, just rounded).
  auto forward = [&](int t, std::size_t j) {
    const patterns::Block sg = segmentOf(blocks(ring.allgatherSendBlock(t)), j, seg.elems);
    call.send(ring.next(), id(kSecondPhase, t, j), gatherWire + sg.offset, sg.count * 2);
  };

  // Reduce-scatter: step s sends block reduceScatterSendBlock(s) (step 0 straight from the input, later steps what
  // they reduced) and reduces reduceScatterRecvBlock(s) into `out`.
  std::vector<transport::NetOp*> recvs[2] = {std::vector<transport::NetOp*>(nseg),
                                             std::vector<transport::NetOp*>(nseg)};
  auto postRecvs = [&](int s) {
    const patterns::Block blk = blocks(ring.reduceScatterRecvBlock(s));
    std::uint16_t* buf = recvWire + static_cast<std::size_t>(s % 2) * maxBlock;
    for (std::size_t j = 0; j < nseg; ++j) {
      const patterns::Block sg = segmentOf(blk, j, seg.elems);
      recvs[s % 2][j] = &call.recv(ring.prev(), id(0, s, j), buf + (sg.offset - blk.offset), sg.count * 2);
    }
  };
  // Segment j of step s's send, in its wire region; `arrived` null: step 0, this rank's input rounded; else the sum of
  // the input and what arrived at step s - 1 for the same block (the ring sends at step s what it got at s - 1), in
  // one pass, never kept in float32.
  auto postSend = [&](int s, std::size_t j, const std::uint16_t* arrived) {
    const patterns::Block blk = blocks(ring.reduceScatterSendBlock(s));
    const patterns::Block sg = segmentOf(blk, j, seg.elems);
    std::uint16_t* w = sendWire + static_cast<std::size_t>(s) * maxBlock + (sg.offset - blk.offset);
    if (arrived) {
      sumToBfloat16(w, in + sg.offset, arrived + (sg.offset - blk.offset), sg.count);
    } else {
      toBfloat16(w, in + sg.offset, sg.count);
    }
    call.send(ring.next(), id(0, s, j), w, sg.count * 2);
  };
  postRecvs(0);
  for (std::size_t j = 0; j < nseg; ++j) postSend(0, j, nullptr);
  for (int s = 0; s < steps; ++s) {
    if (s + 1 < steps) postRecvs(s + 1);
    const patterns::Block blk = blocks(ring.reduceScatterRecvBlock(s));
    const bool last = s + 1 == steps;  // then blk is this rank's own block
    const std::uint16_t* arrived = recvWire + static_cast<std::size_t>(s % 2) * maxBlock;
    for (std::size_t j = 0; j < nseg; ++j) {
      call.wait(*recvs[s % 2][j]);
      if (!last) {
        postSend(s + 1, j, arrived);
        continue;
      }
      // Final: the owner sends it as bfloat16 and keeps the same rounding, so every rank ends with the same bits.
      const patterns::Block sg = segmentOf(blk, j, seg.elems);
      finishBfloat16(out + sg.offset, gatherWire + sg.offset, in + sg.offset, arrived + (sg.offset - blk.offset),
                     sg.count, op.kind == ReduceKind::kAvg ? n : 1);
      forward(0, j);
    }
  }

  // Allgather: forwarded blocks go on unchanged.
  for (int t = 0; t < steps; ++t) {
    const patterns::Block blk = blocks(ring.allgatherRecvBlock(t));
    for (std::size_t j = 0; j < nseg; ++j) {
      call.wait(*gathers[t * nseg + j]);
      const patterns::Block sg = segmentOf(blk, j, seg.elems);
      fromBfloat16(out + sg.offset, gatherWire + sg.offset, sg.count);
      if (t + 1 < steps) forward(t + 1, j);
    }
  }
  call.waitAll();
}

}  // namespace braid::host
