// The ring allreduce, allgather and reduce-scatter on buffers the host reaches only through copies
// (host/staged_buffer.hpp), window by window. The allreduce:
// while window w goes around the ring, window w+1 is copied in and w's finished segments are copied out. Inside a
// window the ring asks for each block when it first reads it and hands over each segment when it is final, so even
// a one-window call overlaps its copies with its transfers. Host memory: two windows, whatever the call's size.
// Where the buffers' side reduces (the GPU: StagedBuffer::reducesWhereTheDataIs), only the block sent unreduced is
// copied in; every other block is read in place by the reduction, which writes its result to the slot the ring
// sends from.
#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "algorithms/host/contribution.hpp"
#include "algorithms/host/net/net_engine.hpp"
#include "algorithms/host/net/segments.hpp"
#include "algorithms/patterns/ring.hpp"

namespace braid::host {

namespace {

// Windows over n blocks of `blockElems` elements (an allgather's output, a reduce-scatter's input): window k holds
// elements [k * piece, k * piece + countIn(k)) of every block, rank r's piece at r * countIn(k) in the slot.
struct PieceWindows {
  std::size_t piece = 0;
  std::size_t windows = 0;
  std::size_t stride = 0;  // step numbers per window: (n - 1) steps of at most this many segments
  std::size_t blockElems = 0;
  std::size_t countIn(std::size_t k) const { return std::min(piece, blockElems - k * piece); }
  /// Window k's blocks in its slot: rank b's piece at b * countIn(k).
  std::function<patterns::Block(int)> blocksOf(std::size_t k) const {
    return [c = countIn(k)](int b) { return patterns::Block{static_cast<std::size_t>(b) * c, c}; };
  }
};

std::optional<PieceWindows> pieceWindows(std::size_t windowBytes, std::size_t blockElems, int n, std::size_t esz) {
  const std::size_t align = std::max<std::size_t>(1, 64 / esz);
  const auto un = static_cast<std::size_t>(n);
  PieceWindows w;
  w.blockElems = blockElems;
  w.piece = std::max(windowBytes / esz / un / align, std::size_t{1}) * align;
  if (w.piece * un * esz > windowBytes || blockElems == 0) return std::nullopt;  // slots too small for the pieces
  w.windows = patterns::chunkCount(blockElems, w.piece);
  w.stride = (un - 1) * patterns::chunkCount(w.piece, std::max<std::size_t>(1, kSegmentBytes / esz));
  if (w.windows * w.stride >= kSecondPhase) return std::nullopt;  // step numbers would run out
  return w;
}

}  // namespace

bool NetEngine::stagedAllreduce(StagedBuffer& staged, std::size_t count, DataType type, ReduceOp op, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const std::size_t bytes = count * esz;
  // The ring only: the latency-bound sizes gain nothing, the bf16 wire has its own buffers, and a premultiplied sum
  // scales its whole input before the first transfer.
  if (direct(bytes) || doubling(bytes) || compresses(count, type, op) || scales(op)) return false;
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

// The allgather: window k copies in this rank's piece (while window k-1 travels), goes around the ring, and hands
// over every piece the moment it lands, to its place in the output (rank r's block at r * count).
bool NetEngine::stagedAllgather(StagedBuffer& staged, std::size_t count, DataType type, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const int n = size();
  if (n == 1 || direct(count * esz * static_cast<std::size_t>(n))) return false;
  const std::optional<PieceWindows> pw = pieceWindows(staged.windowBytes(), count, n, esz);
  if (!pw) return false;
  runCall(describeCall(Collective::kAllgather, env.context.seq, type, count), env, [&](NetCall& call) {
    const auto me = static_cast<std::size_t>(rank());
    std::size_t tickets[2] = {0, 0};
    auto fetchOwn = [&](std::size_t k) {
      const std::size_t c = pw->countIn(k);
      tickets[k % 2] = staged.fetch(staged.slot(static_cast<int>(k % 2)) + me * c * esz, k * pw->piece * esz, c * esz);
    };
    fetchOwn(0);
    for (std::size_t k = 0; k < pw->windows; ++k) {
      if (k + 1 < pw->windows) fetchOwn(k + 1);
      const std::size_t c = pw->countIn(k);
      std::byte* base = staged.slot(static_cast<int>(k % 2));
      const BlockFn blocks = pw->blocksOf(k);
      // Window k-2's copies out of this slot were queued before this window's copy in: once that landed they are
      // done, and the receives may overwrite the slot.
      staged.awaitFetched(tickets[k % 2], env);
      const auto deliver = [&](const patterns::Block& seg) {
        if (seg.count == 0) return;
        const std::size_t r = seg.offset / c;
        staged.deliver(base + seg.offset * esz, (r * count + k * pw->piece + (seg.offset - r * c)) * esz,
                       seg.count * esz);
      };
      ringAllgather(
          call, base, blocks, esz, static_cast<std::uint32_t>(k * pw->stride), [&] { deliver(blocks(rank())); },
          deliver);
    }
  });
  return true;
}

// The reduce-scatter: window k copies in the k-th piece of each of the n input blocks, in the order the ring first
// reads them, reduces around the ring (on the host) and hands over this rank's finished piece.
bool NetEngine::stagedReduceScatter(StagedBuffer& staged, std::size_t recvCount, DataType type, ReduceOp op,
                                    const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const int n = size();
  // contribute() would scale the whole input before the first transfer.
  if (n == 1 || scales(op) || staged.reducesWhereTheDataIs() || direct(recvCount * esz * static_cast<std::size_t>(n))) {
    return false;
  }
  const std::optional<PieceWindows> pw = pieceWindows(staged.windowBytes(), recvCount, n, esz);
  if (!pw) return false;
  runCall(describeCall(Collective::kReduceScatter, env.context.seq, type, recvCount, -1, op.kind), env,
          [&](NetCall& call) {
            const patterns::Ring ring(rank(), n);
            std::vector<std::size_t> tickets[2] = {std::vector<std::size_t>(static_cast<std::size_t>(n)),
                                                   std::vector<std::size_t>(static_cast<std::size_t>(n))};
            auto fetchWindow = [&](std::size_t k) {
              const std::size_t c = pw->countIn(k);
              std::byte* base = staged.slot(static_cast<int>(k % 2));
              auto fetchPiece = [&](int b) {
                const auto ub = static_cast<std::size_t>(b);
                tickets[k % 2][ub] = staged.fetch(base + ub * c * esz, (ub * recvCount + k * pw->piece) * esz, c * esz);
              };
              fetchPiece(ring.reduceScatterSendBlock(0));
              for (int s = 0; s < ring.steps(); ++s) fetchPiece(ring.reduceScatterRecvBlock(s));
            };
            fetchWindow(0);
            for (std::size_t k = 0; k < pw->windows; ++k) {
              if (k + 1 < pw->windows) fetchWindow(k + 1);
              const std::size_t c = pw->countIn(k);
              std::byte* base = staged.slot(static_cast<int>(k % 2));
              const BlockFn blocks = pw->blocksOf(k);
              RingHooks hooks;
              hooks.touch = [&](int b) { staged.awaitFetched(tickets[k % 2][static_cast<std::size_t>(b)], env); };
              std::byte* owned = base + static_cast<std::size_t>(rank()) * c * esz;
              ringReduceScatter(call, base, blocks, esz, type, op, owned, static_cast<std::uint32_t>(k * pw->stride),
                                hooks);
              staged.deliver(owned, k * pw->piece * esz, c * esz);
            }
          });
  return true;
}

}  // namespace braid::host
