// The ring allreduce on buffers the host reaches only through copies (host/staged_buffer.hpp), window by window:
// while window w goes around the ring, window w+1 is copied in and w's finished segments are copied out. Inside a
// window the ring asks for each block when it first reads it and hands over each segment when it is final, so even
// a one-window call overlaps its copies with its transfers. Host memory: two windows, whatever the call's size.
// Where the buffers' side reduces (the GPU: StagedBuffer::reducesWhereTheDataIs), only the block sent unreduced is
// copied in; every other block is read in place by the reduction, which writes its result to the slot the ring
// sends from.
#include <algorithm>
#include <vector>

#include "algorithms/host/net/net_engine.hpp"
#include "algorithms/host/net/segments.hpp"
#include "algorithms/patterns/ring.hpp"

namespace braid::host {

bool NetEngine::allreduceStaged(StagedBuffer& staged, std::size_t count, DataType type, ReduceOp op, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const std::size_t bytes = count * esz;
  // The ring only: the latency-bound sizes gain nothing, the bf16 wire has its own buffers, and a premultiplied sum
  // scales its whole input before the first transfer.
  const bool scales = op.kind == ReduceKind::kPremulSum && op.scale != 1.0;
  if (direct(bytes) || doubling(bytes) || compresses(count, type, op) || scales) return false;
  const int n = size();
  const std::size_t align = 64 / esz;  // as the unstaged ring: every block starts on a cache line
  const std::size_t windowElems =
      std::max<std::size_t>(staged.windowBytes() / esz / align, static_cast<std::size_t>(n)) * align;
  if (windowElems * esz > staged.windowBytes()) return false;  // slots too small for one block per rank
  const std::size_t windows = patterns::chunkCount(count, windowElems);
  // Each window numbers its steps from its own base: (n - 1) steps of at most `segments` each per phase.
  const std::size_t segments = patterns::chunkCount(patterns::chunkCount(windowElems, static_cast<std::size_t>(n)),
                                                    std::max<std::size_t>(1, kSegmentBytes / esz));
  const std::size_t stride = static_cast<std::size_t>(n - 1) * segments;
  if (windows * stride >= kSecondPhase) return false;  // step numbers would run into the second phase

  const bool reducesThere = staged.reducesWhereTheDataIs();
  runCall(describeCall(Collective::kAllreduce, env.context.seq, type, count, -1, op.kind), env, [&](NetCall& call) {
    const patterns::Ring ring(rank(), n);
    auto windowOf = [&](std::size_t w) {
      return patterns::Block{w * windowElems, std::min(windowElems, count - w * windowElems)};
    };
    auto blocksOf = [&](std::size_t w) -> BlockFn {
      const std::size_t elems = windowOf(w).count;
      return [elems, n, align](int b) { return patterns::alignedBlockOf(elems, n, b, align); };
    };
    // A window's blocks are fetched in the order the ring first reads them: this rank's send block of step 0,
    // then the block it reduces into at each step.
    std::vector<std::size_t> tickets[2] = {std::vector<std::size_t>(n), std::vector<std::size_t>(n)};
    auto fetchWindow = [&](std::size_t w) {
      const patterns::Block win = windowOf(w);
      const BlockFn blocks = blocksOf(w);
      std::byte* base = staged.slot(static_cast<int>(w % 2));
      auto fetchBlock = [&](int b) {
        const patterns::Block blk = blocks(b);
        tickets[w % 2][b] = staged.fetch(base + blk.offset * esz, (win.offset + blk.offset) * esz, blk.count * esz);
      };
      fetchBlock(ring.reduceScatterSendBlock(0));
      if (reducesThere) return;  // the other blocks are read where they are, by the reductions
      for (int s = 0; s < ring.steps(); ++s) fetchBlock(ring.reduceScatterRecvBlock(s));
    };
    fetchWindow(0);
    for (std::size_t w = 0; w < windows; ++w) {
      // Started before this window's copies out: they follow it on the copy queue, and its slot's last
      // deliveries (window w-1) were started before this.
      if (w + 1 < windows) fetchWindow(w + 1);
      const patterns::Block win = windowOf(w);
      const BlockFn blocks = blocksOf(w);
      std::byte* base = staged.slot(static_cast<int>(w % 2));
      const auto stepBase = static_cast<std::uint32_t>(w * stride);
      RingHooks hooks;
      hooks.touch = [&](int b) { staged.awaitFetched(tickets[w % 2][b], env); };
      if (reducesThere) {
        hooks.receiveArea = [&](std::size_t bytes) { return staged.receiveArea(bytes); };
        hooks.reduce = [&](std::byte* dst, const std::byte* received, const patterns::Block& seg, ReduceKind kind) {
          staged.awaitFetched(staged.reduce(dst, received, (win.offset + seg.offset) * esz, seg.count, type, kind, n),
                              env);
        };
      }
      const auto deliver = [&](const patterns::Block& piece) {
        if (piece.count > 0)
          staged.deliver(base + piece.offset * esz, (win.offset + piece.offset) * esz, piece.count * esz);
      };
      const patterns::Block owned = blocks(rank());
      ringReduceScatter(call, base, blocks, esz, type, op, base + owned.offset * esz, stepBase, hooks);
      deliver(owned);
      ringAllgather(call, base, blocks, esz, kSecondPhase + stepBase, {}, deliver);
    }
  });
  return true;
}

}  // namespace braid::host
