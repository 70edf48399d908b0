// Data-movement collectives over local rounds: barrier, broadcast, allgather(v), gather, scatter, alltoall(v).
#include <algorithm>
#include <vector>

#include "algorithms/host/copy.hpp"
#include "algorithms/host/local_collectives.hpp"
#include "algorithms/host/round_sync.hpp"
#include "algorithms/host/single_copy.hpp"
#include "algorithms/patterns/partition.hpp"
#include "base/error.hpp"

namespace braid::host {

namespace {

// Elements of a length-`total` array that round `k` of `chunk` elements covers.
std::size_t piece(std::size_t total, std::size_t k, std::size_t chunk) {
  const std::size_t start = k * chunk;
  if (start >= total) return 0;
  return std::min(chunk, total - start);
}

std::size_t roundsFor(std::size_t total, std::size_t chunk) {
  // At least one round: a zero-size call still meets its peers, so mismatched calls are caught.
  return total == 0 ? 1 : (total + chunk - 1) / chunk;
}

std::uint64_t hashCounts(std::span<const std::size_t> counts) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (std::size_t c : counts) {
    for (int b = 0; b < 8; ++b) {
      h ^= (c >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h | 1;  // never 0, which means "no shape"
}

std::size_t perPeerChunk(std::size_t slotBytes, std::size_t esz, int n, const CallContext& ctx) {
  const std::size_t chunk = slotBytes / (esz * static_cast<std::size_t>(n));
  if (chunk == 0) fail(ErrorCode::kUnavailable, ctx, "BRAID_SHM_SLOT_BYTES too small for ", n, " ranks");
  return chunk;
}

}  // namespace

void LocalCollectives::readBlocks(SingleCopy& one, std::byte* out, std::size_t count, std::size_t esz,
                                  std::size_t offset, const std::byte* own, bool stream) {
  auto pass = [&](std::size_t begin, std::size_t end, int) {
    patterns::forEachBlockIn(begin, end, count, [&](std::size_t r, std::size_t first, std::size_t last) {
      std::byte* to = out + (r * count + first) * esz;
      if (static_cast<int>(r) != rank()) {
        one.read(static_cast<int>(r), offset + first * esz, to, (last - first) * esz);
      } else if (own != nullptr) {
        copyOut(to, own + first * esz, (last - first) * esz, stream);
      }
    });
  };
  cut(count * static_cast<std::size_t>(size()), esz, pass);
}

void LocalCollectives::barrier(const OpEnv& env) {
  RoundSync sync(fabric_, round_, describeCall(Collective::kBarrier, env.context.seq, DataType::kUint8, 0), env);
  sync.exchange();
}

void LocalCollectives::reject(const OpEnv& env) {
  RoundSync sync(fabric_, round_, describeCall(Collective::kRejected, env.context.seq, DataType::kUint8, 0), env);
  sync.exchange();
}

void LocalCollectives::broadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  RoundSync sync(fabric_, round_, describeCall(Collective::kBroadcast, env.context.seq, type, count, root), env);
  const std::size_t chunk = sync.slotBytes() / esz;
  auto* data = static_cast<std::byte*>(buf);
  const bool stream = streams(count * esz);
  if (readsInPlace(count * esz)) {
    SingleCopy one(sync, singleCopy_, options_.singleCopy, data);
    if (one.active()) {
      auto read = [&](std::size_t begin, std::size_t end, int) {
        one.read(root, begin * esz, data + begin * esz, (end - begin) * esz);
      };
      if (rank() != root) cut(count, esz, read);
      if (one.finish()) return;
    }
  }
  for (std::size_t k = 0, rounds = roundsFor(count, chunk); k < rounds; ++k) {
    const std::size_t len = piece(count, k, chunk);
    if (rank() == root) copyBytes(sync.nextSlot(), data + k * chunk * esz, len * esz);
    sync.expectRead(0, len * esz, root);
    sync.exchange();
    if (rank() != root) copyOut(data + k * chunk * esz, sync.slot(root), len * esz, stream);
  }
}

void LocalCollectives::allgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  RoundSync sync(fabric_, round_, describeCall(Collective::kAllgather, env.context.seq, type, count), env);
  const std::size_t chunk = sync.slotBytes() / esz;
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  const bool inPlace = in == out + static_cast<std::size_t>(rank()) * count * esz;
  const bool stream = streams(count * static_cast<std::size_t>(size()) * esz);
  if (readsInPlace(count * esz)) {
    SingleCopy one(sync, singleCopy_, options_.singleCopy, in);
    if (one.active()) {
      readBlocks(one, out, count, esz, 0, inPlace ? nullptr : in, stream);
      if (one.finish()) return;
    }
  }
  for (std::size_t k = 0, rounds = roundsFor(count, chunk); k < rounds; ++k) {
    const std::size_t len = piece(count, k, chunk);
    std::byte* slot = sync.nextSlot();
    auto copyIn = [&](std::size_t begin, std::size_t end, int) {
      copyBytes(slot + begin * esz, in + (k * chunk + begin) * esz, (end - begin) * esz);
    };
    cut(len, esz, copyIn);
    sync.expectRead(0, len * esz);
    sync.exchange();
    // Out of the slots: every rank's part, the pass running over the size() parts end to end.
    auto gather = [&](std::size_t begin, std::size_t end, int) {
      patterns::forEachBlockIn(begin, end, len, [&](std::size_t r, std::size_t first, std::size_t last) {
        if (static_cast<int>(r) == rank() && inPlace) return;
        copyOut(out + (r * count + k * chunk + first) * esz, sync.slot(static_cast<int>(r)) + first * esz,
                (last - first) * esz, stream);
      });
    };
    cut(len * static_cast<std::size_t>(size()), esz, gather);
  }
}

void LocalCollectives::allgatherv(const void* send, std::size_t sendCount, void* recv,
                                  std::span<const std::size_t> recvCounts, std::span<const std::size_t> displs,
                                  DataType type, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  std::size_t total = 0, largest = 0;
  for (std::size_t c : recvCounts) {
    total += c;
    largest = std::max(largest, c);
  }
  RoundSync sync(
      fabric_, round_,
      describeCall(Collective::kAllgatherv, env.context.seq, type, total, -1, ReduceKind::kSum, hashCounts(recvCounts)),
      env);
  const std::size_t chunk = sync.slotBytes() / esz;
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  const bool inPlace = in == out + displs[rank()] * esz;
  const bool stream = streams(total * esz);
  if (readsInPlace(largest * esz)) {
    SingleCopy one(sync, singleCopy_, options_.singleCopy, in);
    if (one.active()) {
      for (int r = 0; r < size(); ++r) {
        std::byte* to = out + displs[r] * esz;
        if (r != rank()) {
          one.read(r, 0, to, recvCounts[r] * esz);
        } else if (!inPlace) {
          copyOut(to, in, sendCount * esz, stream);
        }
      }
      if (one.finish()) return;
    }
  }
  for (std::size_t k = 0, rounds = roundsFor(largest, chunk); k < rounds; ++k) {
    copyBytes(sync.nextSlot(), in + k * chunk * esz, piece(sendCount, k, chunk) * esz);
    sync.exchange();
    for (int r = 0; r < size(); ++r) {
      if (r == rank() && inPlace) continue;
      copyOut(out + (displs[r] + k * chunk) * esz, sync.slot(r), piece(recvCounts[r], k, chunk) * esz, stream);
    }
  }
}

void LocalCollectives::gather(const void* send, void* recv, std::size_t count, DataType type, int root,
                              const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  RoundSync sync(fabric_, round_, describeCall(Collective::kGather, env.context.seq, type, count, root), env);
  const std::size_t chunk = sync.slotBytes() / esz;
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  const bool inPlace = rank() == root && in == out + static_cast<std::size_t>(root) * count * esz;
  const bool stream = streams(count * static_cast<std::size_t>(size()) * esz);
  if (readsInPlace(count * esz)) {
    SingleCopy one(sync, singleCopy_, options_.singleCopy, in);
    if (one.active()) {
      if (rank() == root) readBlocks(one, out, count, esz, 0, inPlace ? nullptr : in, stream);
      if (one.finish()) return;
    }
  }
  for (std::size_t k = 0, rounds = roundsFor(count, chunk); k < rounds; ++k) {
    const std::size_t len = piece(count, k, chunk);
    if (rank() != root) copyBytes(sync.nextSlot(), in + k * chunk * esz, len * esz);
    if (rank() == root) sync.expectRead(0, len * esz);
    sync.exchange();
    if (rank() != root) continue;
    for (int r = 0; r < size(); ++r) {
      if (r == root) {
        if (!inPlace) copyOut(out + (r * count + k * chunk) * esz, in + k * chunk * esz, len * esz, stream);
      } else {
        copyOut(out + (r * count + k * chunk) * esz, sync.slot(r), len * esz, stream);
      }
    }
  }
}

void LocalCollectives::scatter(const void* send, void* recv, std::size_t count, DataType type, int root,
                               const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const int n = size();
  RoundSync sync(fabric_, round_, describeCall(Collective::kScatter, env.context.seq, type, count, root), env);
  const std::size_t chunk = perPeerChunk(sync.slotBytes(), esz, n, env.context);
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  const bool inPlace = rank() == root && out == in + static_cast<std::size_t>(root) * count * esz;
  const bool stream = streams(count * esz);
  if (readsInPlace(count * esz)) {
    SingleCopy one(sync, singleCopy_, options_.singleCopy, in);
    if (one.active()) {
      const std::size_t mine = static_cast<std::size_t>(rank()) * count * esz;
      auto read = [&](std::size_t begin, std::size_t end, int) {
        one.read(root, mine + begin * esz, out + begin * esz, (end - begin) * esz);
      };
      if (rank() != root) {
        cut(count, esz, read);
      } else if (!inPlace) {
        copyOut(out, in + mine, count * esz, stream);
      }
      if (one.finish()) return;
    }
  }
  for (std::size_t k = 0, rounds = roundsFor(count, chunk); k < rounds; ++k) {
    const std::size_t len = piece(count, k, chunk);
    if (rank() == root) {
      for (int j = 0; j < n; ++j) {
        if (j == root) continue;
        copyBytes(sync.nextSlot() + j * chunk * esz, in + (j * count + k * chunk) * esz, len * esz);
      }
    }
    if (rank() != root) sync.expectRead(static_cast<std::size_t>(rank()) * chunk * esz, len * esz, root);
    sync.exchange();
    if (rank() != root) {
      copyOut(out + k * chunk * esz, sync.slot(root) + rank() * chunk * esz, len * esz, stream);
    } else if (!inPlace) {
      copyOut(out + k * chunk * esz, in + (root * count + k * chunk) * esz, len * esz, stream);
    }
  }
}

void LocalCollectives::alltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const int n = size();
  RoundSync sync(fabric_, round_, describeCall(Collective::kAlltoall, env.context.seq, type, count), env);
  const std::size_t chunk = perPeerChunk(sync.slotBytes(), esz, n, env.context);
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  const bool inPlace = in == out;
  const bool stream = streams(count * static_cast<std::size_t>(n) * esz);
  const std::size_t block = count * esz;
  const std::size_t mine = static_cast<std::size_t>(rank()) * block;
  // In place, a rank overwrites the blocks its peers read: those calls go through the slots.
  if (readsInPlace(block)) {
    SingleCopy one(sync, singleCopy_, options_.singleCopy && !inPlace, in);
    if (one.active()) {
      readBlocks(one, out, count, esz, mine, in + mine, stream);
      if (one.finish()) return;
    }
  }
  // In place works chunk by chunk: round k reads chunk k of every send block before anyone writes it. This rank's own
  // block skips the slot.
  for (std::size_t k = 0, rounds = roundsFor(count, chunk); k < rounds; ++k) {
    const std::size_t len = piece(count, k, chunk);
    for (int j = 0; j < n; ++j) {
      if (j != rank()) copyBytes(sync.nextSlot() + j * chunk * esz, in + (j * count + k * chunk) * esz, len * esz);
    }
    sync.expectRead(static_cast<std::size_t>(rank()) * chunk * esz, len * esz);
    sync.exchange();
    for (int r = 0; r < n; ++r) {
      if (r == rank()) {
        if (!inPlace) copyOut(out + mine + k * chunk * esz, in + mine + k * chunk * esz, len * esz, stream);
      } else {
        copyOut(out + (r * count + k * chunk) * esz, sync.slot(r) + rank() * chunk * esz, len * esz, stream);
      }
    }
  }
}

void LocalCollectives::alltoallv(const void* send, std::span<const std::size_t> sendCounts,
                                 std::span<const std::size_t> sendDispls, void* recv,
                                 std::span<const std::size_t> recvCounts, std::span<const std::size_t> recvDispls,
                                 DataType type, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const int n = size();
  const int me = rank();
  RoundSync sync(fabric_, round_, describeCall(Collective::kAlltoallv, env.context.seq, type, 0), env);
  // Round 0: every rank publishes its send and receive counts, so every rank checks the whole matrix (and all
  // reach the same verdict) and knows how many data rounds follow, and its send displacements, where a peer that
  // reads in place finds its block.
  if (3 * static_cast<std::size_t>(n) * sizeof(std::uint64_t) > sync.slotBytes()) {
    fail(ErrorCode::kUnavailable, env.context, "BRAID_SHM_SLOT_BYTES too small for alltoallv among ", n, " ranks");
  }
  auto* meta = reinterpret_cast<std::uint64_t*>(sync.nextSlot());
  for (int j = 0; j < n; ++j) {
    meta[j] = sendCounts[j];
    meta[n + j] = recvCounts[j];
    meta[2 * n + j] = sendDispls[j];
  }
  sync.exchange();
  std::size_t largest = 0;
  for (int i = 0; i < n; ++i) {
    const auto* rowI = reinterpret_cast<const std::uint64_t*>(sync.slot(i));
    for (int j = 0; j < n; ++j) {
      const auto* rowJ = reinterpret_cast<const std::uint64_t*>(sync.slot(j));
      const std::uint64_t sent = rowI[j], expected = rowJ[n + i];
      if (sent != expected) {
        ErrorContext ctx = env.context;
        ctx.peer = i == me ? j : i;
        fail(ErrorCode::kMismatch, ctx, "alltoallv counts disagree: rank ", i, " sends ", sent, " elements to rank ", j,
             " but rank ", j, " expects ", expected, " from rank ", i);
      }
      largest = std::max<std::size_t>(largest, sent);
    }
  }
  const std::size_t chunk = perPeerChunk(sync.slotBytes(), esz, n, env.context);
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  const std::size_t rounds = largest == 0 ? 0 : (largest + chunk - 1) / chunk;
  std::size_t received = 0;
  for (std::size_t c : recvCounts) received += c;
  const bool stream = streams(received * esz);
  // The largest block decides, which every rank saw; in place, a rank overwrites what its peers read.
  if (readsInPlace(largest * esz)) {
    std::vector<std::size_t> theirs(static_cast<std::size_t>(n));  // where each peer's block for this rank starts
    for (int r = 0; r < n; ++r) theirs[r] = reinterpret_cast<const std::uint64_t*>(sync.slot(r))[2 * n + me];
    SingleCopy one(sync, singleCopy_, options_.singleCopy && send != recv, in);
    if (one.active()) {
      for (int r = 0; r < n; ++r) {
        std::byte* to = out + recvDispls[r] * esz;
        if (r != me) {
          one.read(r, theirs[r] * esz, to, recvCounts[r] * esz);
        } else {
          copyOut(to, in + sendDispls[me] * esz, recvCounts[me] * esz, stream);
        }
      }
      if (one.finish()) return;
    }
  }
  for (std::size_t k = 0; k < rounds; ++k) {
    for (int j = 0; j < n; ++j) {
      copyBytes(sync.nextSlot() + j * chunk * esz, in + (sendDispls[j] + k * chunk) * esz,
                piece(sendCounts[j], k, chunk) * esz);
    }
    sync.exchange();
    for (int r = 0; r < n; ++r) {
      copyOut(out + (recvDispls[r] + k * chunk) * esz, sync.slot(r) + me * chunk * esz,
              piece(recvCounts[r], k, chunk) * esz, stream);
    }
  }
}

}  // namespace braid::host
