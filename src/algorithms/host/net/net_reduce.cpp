// Reducing collectives over the network transport: allreduce, reduce, reduce-scatter (see net_engine.hpp).
#include <algorithm>

#include "algorithms/host/contribution.hpp"
#include "algorithms/host/copy.hpp"
#include "algorithms/host/net/net_engine.hpp"
#include "algorithms/host/net/ring_gather.hpp"
#include "algorithms/host/net/segments.hpp"
#include "algorithms/host/reduce_cpu.hpp"
#include "algorithms/host/round_sync.hpp"
#include "algorithms/patterns/halving_doubling.hpp"
#include "algorithms/patterns/ring.hpp"

namespace braid::host {

namespace {

// This rank's contribution to a ring reduce-scatter over `accum`: the caller's input read in place (hooks.input;
// when send is accum, that is accum itself), or, for a premultiplied sum, the scaled copy written into accum.
RingHooks contributionOf(std::byte* accum, const void* send, std::size_t count, DataType type, ReduceOp op) {
  RingHooks hooks;
  if (scales(op)) {
    contribute(accum, send, count, type, op);
  } else {
    hooks.input = static_cast<const std::byte*>(send);
  }
  return hooks;
}

}  // namespace

std::byte* NetEngine::scratch(std::size_t bytes) { return scratch_.ensure(*net_, bytes); }

void NetEngine::ringReduceScatter(NetCall& call, std::byte* accum, const BlockFn& blocks, std::size_t esz,
                                  DataType type, ReduceOp op, std::byte* ownedOut, std::uint32_t stepBase,
                                  const RingHooks& hooks) {
  const int n = size();
  const patterns::Block owned = blocks(rank());
  // Each block is reduced at most once by this rank (at the step it arrives), so until then accum's copy of it would
  // be the input's: reading the input instead is the same.
  const std::byte* input = hooks.input != nullptr ? hooks.input : accum;
  if (n == 1) {
    if (op.kind == ReduceKind::kAvg) {
      const void* src = input + owned.offset * esz;
      reduceSources(ownedOut, &src, 1, owned.count, type, op.kind, 1);
    } else {
      copyBytes(ownedOut, input + owned.offset * esz, owned.count * esz);
    }
    return;
  }
  const patterns::Ring ring(rank(), n);
  const Segmentation seg = segmentationOf(blocks, n, esz);
  const std::size_t maxBlock = seg.maxBlock;
  const std::size_t segElems = seg.elems;
  const std::size_t nseg = seg.perBlock;
  std::byte* tmp = hooks.receiveArea ? hooks.receiveArea(2 * maxBlock * esz) : scratch(2 * maxBlock * esz);
  const ReduceKind partialKind = op.kind == ReduceKind::kAvg ? ReduceKind::kSum : op.kind;
  const int steps = ring.steps();
  std::vector<transport::NetOp*> recvs[2];
  recvs[0].resize(nseg);
  recvs[1].resize(nseg);
  auto stepId = [&](int s, std::size_t j) { return stepBase + static_cast<std::uint32_t>(s * nseg + j); };
  auto postRecvs = [&](int s) {
    const patterns::Block blk = blocks(ring.reduceScatterRecvBlock(s));
    std::byte* buf = tmp + static_cast<std::size_t>(s % 2) * maxBlock * esz;
    for (std::size_t j = 0; j < nseg; ++j) {
      const patterns::Block sg = segmentOf(blk, j, segElems);
      recvs[s % 2][j] = &call.recv(ring.prev(), stepId(s, j), buf + (sg.offset - blk.offset) * esz, sg.count * esz);
    }
  };
  auto postSend = [&](int s, std::size_t j) {  // step 0 sends the unreduced block, later steps what they reduced
    const patterns::Block sg = segmentOf(blocks(ring.reduceScatterSendBlock(s)), j, segElems);
    call.send(ring.next(), stepId(s, j), (s == 0 ? input : accum) + sg.offset * esz, sg.count * esz);
  };

  postRecvs(0);
  if (hooks.touch) hooks.touch(ring.reduceScatterSendBlock(0));
  for (std::size_t j = 0; j < nseg; ++j) postSend(0, j);
  for (int s = 0; s < steps; ++s) {
    if (s + 1 < steps) postRecvs(s + 1);  // into the other half of tmp, whose step s-1 data is reduced already
    if (s + 1 == steps && hooks.lastStep) hooks.lastStep();
    if (hooks.touch && !hooks.reduce) hooks.touch(ring.reduceScatterRecvBlock(s));
    const patterns::Block blk = blocks(ring.reduceScatterRecvBlock(s));
    const bool last = s + 1 == steps;  // then blk is this rank's own block, complete after this step
    const std::byte* received = tmp + static_cast<std::size_t>(s % 2) * maxBlock * esz;
    for (std::size_t j = 0; j < nseg; ++j) {
      call.wait(*recvs[s % 2][j]);
      const patterns::Block sg = segmentOf(blk, j, segElems);
      std::byte* dst = last ? ownedOut + (sg.offset - blk.offset) * esz : accum + sg.offset * esz;
      const std::byte* theirs = received + (sg.offset - blk.offset) * esz;
      const ReduceKind kind = last ? op.kind : partialKind;
      if (sg.count > 0 && hooks.reduce) {
        hooks.reduce(dst, theirs, sg, kind);
      } else if (sg.count > 0) {
        const void* srcs[2] = {input + sg.offset * esz, theirs};
        reduceSources(dst, srcs, 2, sg.count, type, kind, n);
      }
      if (!last) postSend(s + 1, j);
      if (last && hooks.owned) hooks.owned(j);
    }
  }
  // The blocks sent are overwritten by whatever follows (an allgather). A fused allgather waits for them itself: a
  // block's final value reaches this rank only after every send of its partial sums was received.
  if (!hooks.owned) call.waitAll();
}

void NetEngine::directReduce(NetCall& call, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                             int root) {
  const int n = size();
  const std::size_t bytes = count * dataTypeSize(type);
  const bool keeps = root < 0 || root == rank();
  std::byte* all = scratch(static_cast<std::size_t>(n) * bytes);
  std::byte* mine = all + static_cast<std::size_t>(rank()) * bytes;
  contribute(mine, send, count, type, op);
  for (int i = 1; i < n; ++i) {
    const int to = (rank() + i) % n;
    const int from = (rank() - i + n) % n;
    if (keeps) call.recv(from, 0, all + static_cast<std::size_t>(from) * bytes, bytes);
    if (root < 0 || to == root) call.send(to, 0, mine, bytes);
  }
  call.waitAll();
  if (!keeps || count == 0) return;
  sources_.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) sources_[r] = all + static_cast<std::size_t>(r) * bytes;
  reduceSources(recv, sources_.data(), n, count, type, op.kind, n);
}

void NetEngine::doublingAllreduce(NetCall& call, const void* send, void* recv, std::size_t count, DataType type,
                                  ReduceOp op) {
  const int n = size();
  const patterns::HalvingDoubling shape(rank(), n);
  const std::size_t bytes = count * dataTypeSize(type);
  std::byte* mine = scratch(2 * bytes);
  std::byte* theirs = mine + bytes;
  auto* out = static_cast<std::byte*>(recv);
  contribute(mine, send, count, type, op);
  const ReduceKind partialKind = op.kind == ReduceKind::kAvg ? ReduceKind::kSum : op.kind;
  constexpr std::uint32_t kFoldIn = 0;
  constexpr std::uint32_t kFoldOut = 0x7fffffffu;
  if (shape.foldedOut()) {  // ranks p..n-1 hand their input to rank - p and get the result back
    call.send(shape.foldPartner(), kFoldIn, mine, bytes);
    call.recv(shape.foldPartner(), kFoldOut, out, bytes);
    call.waitAll();
    return;
  }
  // Operands in rank order (lower rank's partial first), so that every rank computes the same expression: the
  // results are bitwise identical everywhere even for operations that are not (min/max of -0 and +0).
  auto combine = [&](std::byte* dst, bool mineFirst, ReduceKind kind) {
    const void* srcs[2] = {mineFirst ? mine : theirs, mineFirst ? theirs : mine};
    if (count > 0) reduceSources(dst, srcs, 2, count, type, kind, n);
  };
  const int partner = shape.foldPartner();
  if (partner >= 0) {
    call.wait(call.recv(partner, kFoldIn, theirs, bytes));
    combine(mine, true, partialKind);
  }
  for (int k = 0; k < shape.steps(); ++k) {
    const int peer = shape.rankOfVirtual(shape.virtualRank() ^ (1 << k));
    call.send(peer, static_cast<std::uint32_t>(1 + k), mine, bytes);
    call.recv(peer, static_cast<std::uint32_t>(1 + k), theirs, bytes);
    call.waitAll();  // the send read `mine`, which the reduction now overwrites
    const bool last = k + 1 == shape.steps();
    combine(last ? out : mine, rank() < peer, last ? op.kind : partialKind);
  }
  if (partner >= 0) call.send(partner, kFoldOut, out, bytes);
  call.waitAll();
}

void NetEngine::runAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                             const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  runCall(describeCall(Collective::kAllreduce, env.context.seq, type, count, -1, op.kind), env, [&](NetCall& call) {
    if (doubling(count * esz)) return doublingAllreduce(call, send, recv, count, type, op);
    if (direct(count * esz)) return directReduce(call, send, recv, count, type, op, -1);
    if (compresses(count, type, op)) return compressedAllreduce(call, send, recv, count, op);
    auto* out = static_cast<std::byte*>(recv);
    RingHooks hooks = contributionOf(out, send, count, type, op);
    const BlockFn blocks = [&](int b) { return patterns::alignedBlockOf(count, size(), b, 64 / esz); };
    // The allgather starts inside the reduce-scatter's last step: its receives posted as that step begins, each
    // segment of this rank's block sent on as soon as it is reduced, so the link carries the first while the rest
    // are still being reduced.
    RingGather gather(call, out, blocks, esz, kSecondPhase);
    hooks.lastStep = [&] { gather.postReceives(); };
    hooks.owned = [&](std::size_t j) { gather.sendOwn(j); };
    ringReduceScatter(call, out, blocks, esz, type, op, out + blocks(rank()).offset * esz, 0, hooks);
    gather.finish();
  });
}

void NetEngine::runReduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                          const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  runCall(describeCall(Collective::kReduce, env.context.seq, type, count, root, op.kind), env, [&](NetCall& call) {
    if (direct(count * esz)) return directReduce(call, send, recv, count, type, op, root);
    std::byte* accum = rank() == root ? static_cast<std::byte*>(recv) : workspace_.ensure(*net_, count * esz);
    const RingHooks hooks = contributionOf(accum, send, count, type, op);
    const BlockFn blocks = [&](int b) { return patterns::alignedBlockOf(count, size(), b, 64 / esz); };
    const patterns::Block owned = blocks(rank());
    ringReduceScatter(call, accum, blocks, esz, type, op, accum + owned.offset * esz, 0, hooks);
    if (rank() != root) {
      call.send(root, kSecondPhase, accum + owned.offset * esz, owned.count * esz);
    } else {
      for (int p = 0; p < size(); ++p) {
        if (p == root) continue;
        const patterns::Block blk = blocks(p);
        call.recv(p, kSecondPhase, accum + blk.offset * esz, blk.count * esz);
      }
    }
    call.waitAll();
  });
}

void NetEngine::runReduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                                 const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const int n = size();
  const std::size_t total = recvCount * static_cast<std::size_t>(n);
  runCall(describeCall(Collective::kReduceScatter, env.context.seq, type, recvCount, -1, op.kind), env,
          [&](NetCall& call) {
            std::byte* accum = workspace_.ensure(*net_, total * esz);
            const std::size_t blockBytes = recvCount * esz;
            if (direct(total * esz)) {
              contribute(accum, send, total, type, op);
              // Block p of every rank goes to rank p, which reduces the n blocks in rank order.
              std::byte* all = scratch(total * esz);
              for (int i = 1; i < n; ++i) {
                const int to = (rank() + i) % n;
                const int from = (rank() - i + n) % n;
                call.recv(from, 0, all + static_cast<std::size_t>(from) * blockBytes, blockBytes);
                call.send(to, 0, accum + static_cast<std::size_t>(to) * blockBytes, blockBytes);
              }
              call.waitAll();
              copyBytes(all + static_cast<std::size_t>(rank()) * blockBytes,
                        accum + static_cast<std::size_t>(rank()) * blockBytes, blockBytes);
              if (recvCount == 0) return;
              sources_.resize(static_cast<std::size_t>(n));
              for (int r = 0; r < n; ++r) sources_[r] = all + static_cast<std::size_t>(r) * blockBytes;
              reduceSources(recv, sources_.data(), n, recvCount, type, op.kind, n);
              return;
            }
            const BlockFn blocks = [&](int b) {
              return patterns::Block{static_cast<std::size_t>(b) * recvCount, recvCount};
            };
            const RingHooks hooks = contributionOf(accum, send, total, type, op);
            ringReduceScatter(call, accum, blocks, esz, type, op, static_cast<std::byte*>(recv), 0, hooks);
          });
}

}  // namespace braid::host
