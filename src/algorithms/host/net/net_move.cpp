// Collectives that move data without reducing it, over the network transport (see net_engine.hpp).
#include <algorithm>

#include "algorithms/host/copy.hpp"
#include "algorithms/host/net/net_engine.hpp"
#include "algorithms/host/net/ring_gather.hpp"
#include "algorithms/host/net/segments.hpp"
#include "algorithms/host/round_sync.hpp"
#include "algorithms/patterns/ring.hpp"
#include "algorithms/patterns/tree.hpp"

namespace braid::host {

namespace {

bool overlaps(const void* a, std::size_t aBytes, const void* b, std::size_t bBytes) {
  const auto* x = static_cast<const std::byte*>(a);
  const auto* y = static_cast<const std::byte*>(b);
  return aBytes > 0 && bBytes > 0 && x < y + bBytes && y < x + aBytes;
}

}  // namespace

void NetEngine::ringAllgather(NetCall& call, std::byte* buf, const BlockFn& blocks, std::size_t esz,
                              std::uint32_t stepBase, const std::function<void()>& prepare,
                              const std::function<void(const patterns::Block&)>& landed) {
  if (size() == 1) {
    if (prepare) prepare();
    return;
  }
  // The receives are posted before this rank's block is in place: what arrives meanwhile lands in place instead of
  // being kept aside.
  RingGather gather(call, buf, blocks, esz, stepBase);
  gather.postReceives();
  if (prepare) prepare();
  for (std::size_t j = 0; j < gather.segments(); ++j) gather.sendOwn(j);
  gather.finish(landed);
}

void NetEngine::directAllgather(NetCall& call, std::byte* buf, const BlockFn& blocks, std::size_t esz,
                                const std::function<void()>& prepare) {
  const int n = size();
  const patterns::Block mine = blocks(rank());
  for (int i = 1; i < n; ++i) {
    const int from = (rank() - i + n) % n;
    const patterns::Block theirs = blocks(from);
    call.recv(from, 0, buf + theirs.offset * esz, theirs.count * esz);
  }
  if (prepare) prepare();
  for (int i = 1; i < n; ++i) call.send((rank() + i) % n, 0, buf + mine.offset * esz, mine.count * esz);
  call.waitAll();
}

void NetEngine::runAllgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  runCall(describeCall(Collective::kAllgather, env.context.seq, type, count), env, [&](NetCall& call) {
    auto* out = static_cast<std::byte*>(recv);
    const auto placeOwn = [&] { copyBytes(out + static_cast<std::size_t>(rank()) * count * esz, send, count * esz); };
    const BlockFn blocks = [&](int b) { return patterns::Block{static_cast<std::size_t>(b) * count, count}; };
    if (direct(count * esz * static_cast<std::size_t>(size()))) {
      directAllgather(call, out, blocks, esz, placeOwn);
    } else {
      ringAllgather(call, out, blocks, esz, 0, placeOwn);
    }
  });
}

void NetEngine::runAllgatherv(const void* send, std::size_t sendCount, void* recv,
                              std::span<const std::size_t> recvCounts, std::span<const std::size_t> displs,
                              DataType type, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  std::size_t total = 0;
  std::uint64_t shape = 1469598103934665603ull;  // FNV-1a over the counts: ranks must agree on all of them
  for (std::size_t c : recvCounts) {
    total += c;
    shape = (shape ^ c) * 1099511628211ull;
  }
  runCall(describeCall(Collective::kAllgatherv, env.context.seq, type, total, -1, ReduceKind::kSum, shape), env,
          [&](NetCall& call) {
            auto* out = static_cast<std::byte*>(recv);
            const auto placeOwn = [&] { copyBytes(out + displs[rank()] * esz, send, sendCount * esz); };
            const BlockFn blocks = [&](int b) { return patterns::Block{displs[b], recvCounts[b]}; };
            if (direct(total * esz)) {
              directAllgather(call, out, blocks, esz, placeOwn);
            } else {
              ringAllgather(call, out, blocks, esz, 0, placeOwn);
            }
          });
}

void NetEngine::runBroadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env) {
  const std::size_t bytes = count * dataTypeSize(type);
  runCall(describeCall(Collective::kBroadcast, env.context.seq, type, count, root), env, [&](NetCall& call) {
    const int n = size();
    if (n == 1) return;
    auto* data = static_cast<std::byte*>(buf);
    if (direct(bytes)) {
      // Binomial tree: ceil(log2 n) message latencies.
      const patterns::BinomialTree tree(rank(), n, root);
      if (tree.parent() >= 0) call.wait(call.recv(tree.parent(), 0, data, bytes));
      for (int child : tree.children()) call.send(child, 0, data, bytes);
      call.waitAll();
      return;
    }
    // A chain from the root, in segments: each rank forwards a segment as soon as it has it, so every link
    // carries the whole buffer once and the time is ~ bytes / bandwidth + (n-2) segment latencies.
    const int position = (rank() - root + n) % n;
    const int prev = position > 0 ? (rank() - 1 + n) % n : -1;
    const int next = position < n - 1 ? (rank() + 1) % n : -1;
    const std::size_t nseg = patterns::chunkCount(bytes, kSegmentBytes);
    const patterns::Block whole{0, bytes};
    std::vector<transport::NetOp*> recvs(nseg, nullptr);
    if (prev >= 0) {
      for (std::size_t j = 0; j < nseg; ++j) {
        const patterns::Block sg = segmentOf(whole, j, kSegmentBytes);
        recvs[j] = &call.recv(prev, static_cast<std::uint32_t>(j), data + sg.offset, sg.count);
      }
    }
    for (std::size_t j = 0; j < nseg; ++j) {
      if (prev >= 0) call.wait(*recvs[j]);
      const patterns::Block sg = segmentOf(whole, j, kSegmentBytes);
      if (next >= 0) call.send(next, static_cast<std::uint32_t>(j), data + sg.offset, sg.count);
    }
    call.waitAll();
  });
}

void NetEngine::runGather(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env) {
  const std::size_t bytes = count * dataTypeSize(type);
  runCall(describeCall(Collective::kGather, env.context.seq, type, count, root), env, [&](NetCall& call) {
    if (rank() != root) {
      call.send(root, 0, send, bytes);
    } else {
      auto* out = static_cast<std::byte*>(recv);
      for (int p = 0; p < size(); ++p) {
        if (p != root) call.recv(p, 0, out + static_cast<std::size_t>(p) * bytes, bytes);
      }
      // After posting: what arrives meanwhile lands in place instead of being kept aside and copied again.
      copyBytes(out + static_cast<std::size_t>(root) * bytes, send, bytes);
    }
    call.waitAll();
  });
}

void NetEngine::runScatter(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env) {
  const std::size_t bytes = count * dataTypeSize(type);
  runCall(describeCall(Collective::kScatter, env.context.seq, type, count, root), env, [&](NetCall& call) {
    if (rank() != root) {
      call.recv(root, 0, recv, bytes);
    } else {
      const auto* in = static_cast<const std::byte*>(send);
      for (int i = 1; i < size(); ++i) {
        const int p = (root + i) % size();
        call.send(p, 0, in + static_cast<std::size_t>(p) * bytes, bytes);
      }
      copyBytes(recv, in + static_cast<std::size_t>(root) * bytes, bytes);
    }
    call.waitAll();
  });
}

void NetEngine::runAlltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) {
  const std::size_t bytes = count * dataTypeSize(type);
  const int n = size();
  runCall(describeCall(Collective::kAlltoall, env.context.seq, type, count), env, [&](NetCall& call) {
    const std::size_t total = bytes * static_cast<std::size_t>(n);
    const auto* in = static_cast<const std::byte*>(send);
    if (overlaps(send, total, recv, total)) {  // in place: what arrives would overwrite what is still to leave
      std::byte* copy = workspace_.ensure(*net_, total);
      copyBytes(copy, send, total);
      in = copy;
    }
    auto* out = static_cast<std::byte*>(recv);
    for (int i = 1; i < n; ++i) {
      const int to = (rank() + i) % n;
      const int from = (rank() - i + n) % n;
      call.recv(from, 0, out + static_cast<std::size_t>(from) * bytes, bytes);
      call.send(to, 0, in + static_cast<std::size_t>(to) * bytes, bytes);
    }
    copyBytes(out + static_cast<std::size_t>(rank()) * bytes, in + static_cast<std::size_t>(rank()) * bytes, bytes);
    call.waitAll();
  });
}

void NetEngine::runAlltoallv(const void* send, std::span<const std::size_t> sendCounts,
                             std::span<const std::size_t> sendDispls, void* recv,
                             std::span<const std::size_t> recvCounts, std::span<const std::size_t> recvDispls,
                             DataType type, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const int n = size();
  std::size_t sendExtent = 0;
  std::size_t recvExtent = 0;
  for (int p = 0; p < n; ++p) {
    sendExtent = std::max(sendExtent, (sendDispls[p] + sendCounts[p]) * esz);
    recvExtent = std::max(recvExtent, (recvDispls[p] + recvCounts[p]) * esz);
  }
  // Each pair checks its own sizes (a receive of the wrong size is a Mismatch naming both); the descriptor
  // carries no per-rank shape because every rank's counts legitimately differ.
  runCall(describeCall(Collective::kAlltoallv, env.context.seq, type, 0), env, [&](NetCall& call) {
    const auto* in = static_cast<const std::byte*>(send);
    if (overlaps(send, sendExtent, recv, recvExtent)) {
      std::byte* copy = workspace_.ensure(*net_, sendExtent);
      copyBytes(copy, send, sendExtent);
      in = copy;
    }
    auto* out = static_cast<std::byte*>(recv);
    for (int i = 1; i < n; ++i) {
      const int to = (rank() + i) % n;
      const int from = (rank() - i + n) % n;
      call.recv(from, 0, out + recvDispls[from] * esz, recvCounts[from] * esz);
      call.send(to, 0, in + sendDispls[to] * esz, sendCounts[to] * esz);
    }
    if (sendCounts[rank()] != recvCounts[rank()]) {
      fail(ErrorCode::kInvalidArgument, env.context, "sendCounts[", rank(), "] = ", sendCounts[rank()],
           " differs from recvCounts[", rank(), "] = ", recvCounts[rank()]);
    }
    copyBytes(out + recvDispls[rank()] * esz, in + sendDispls[rank()] * esz, sendCounts[rank()] * esz);
    call.waitAll();
  });
}

}  // namespace braid::host
