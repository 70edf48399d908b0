// The collective kernels' templates (protocol in collective_kernels.hpp), shared by collective_kernels.cu (the
// copying kernel, the probe and the (type, op) dispatch) and collective_instances_*.cu (the reducing kernels,
// split by element width so that nvcc compiles them in parallel).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/device/packed.cuh"
#include "cuda/device/reduce_ops.cuh"
#include "cuda/device/signals.cuh"
#include "cuda/kernels/collective_kernels.hpp"

namespace braid::cuda::kernels::detail {

using device::Elem;
using device::isPackAligned;
using device::Pack;
using device::signalPeers;
using device::stateOf;
using device::storePack;
using device::waitPeers;

inline constexpr int kPhaseA = 0;
inline constexpr int kPhaseB = 1;

/// This block's piece [lo, hi) of a window of `len` units: the window of `span` units cut in equal pieces, rounded
/// up to `align` units (so every piece starts 16 bytes into the window's alignment), then clipped to `len`.
/// A kernel cuts every round by the same span (its first window): a block then owns the same inbox bytes in every
/// round, so a block that runs ahead into round t+2 never writes bytes that a peer's other block still reads in
/// round t (blocks wait only for their own twins).
struct Piece {
  std::size_t lo;
  std::size_t hi;
  __device__ std::size_t size() const { return hi - lo; }
  /// The piece clipped to a part of `partLen` units (a shard shorter than the others).
  __device__ std::size_t sizeWithin(std::size_t partLen) const { return partLen > lo ? min(hi, partLen) - lo : 0; }
};

__device__ __forceinline__ Piece pieceOf(std::size_t span, std::size_t len, std::size_t align) {
  std::size_t per = (span + gridDim.x - 1) / gridDim.x;
  per = (per + align - 1) / align * align;
  const std::size_t lo = static_cast<std::size_t>(blockIdx.x) * per;
  return {min(len, lo), min(len, lo + per)};
}

__device__ __forceinline__ std::byte* slotOf(const Channel& ch, int owner, int parity, int slot) {
  return ch.ws[owner] + slotOffset(parity, slot, ch.nranks, ch.slotBytes);
}

__device__ __forceinline__ std::uint32_t allPeers(const Channel& ch) {
  return ((1u << ch.nranks) - 1u) & ~(1u << ch.rank);
}

// ---- Data movement of one block: its threads stride over the block's piece.

// Every load here bypasses L1 (ld.global.cg): inboxes are rewritten by peers every other round, and a line of the
// previous use still in this SM's L1 would be read instead of the new data (L1 is not coherent with NVLink stores;
// L2, where they land, is).
__device__ __forceinline__ uint4 loadCg(const uint4* p) { return __ldcg(p); }
template <typename Bits>
__device__ __forceinline__ Pack<Bits> loadPackCg(const Bits* p) {
  Pack<Bits> pack;
  pack.raw = __ldcg(reinterpret_cast<const uint4*>(p));
  return pack;
}
template <typename T>
__device__ __forceinline__ T loadElementCg(const T* p) {
  if constexpr (sizeof(T) == 1) {
    return static_cast<T>(__ldcg(reinterpret_cast<const unsigned char*>(p)));
  } else if constexpr (sizeof(T) == 2) {
    return static_cast<T>(__ldcg(reinterpret_cast<const unsigned short*>(p)));
  } else if constexpr (sizeof(T) == 4) {
    return static_cast<T>(__ldcg(reinterpret_cast<const unsigned int*>(p)));
  } else {
    return static_cast<T>(__ldcg(reinterpret_cast<const unsigned long long*>(p)));
  }
}

/// Copies `bytes` from src to each of `ndst` destinations, reading the source once: 16 bytes per access, four in
/// flight per thread, when every pointer is 16-byte aligned; else 4 or 1 bytes at a time.
__device__ __forceinline__ void copyToMany(std::byte* const* dst, int ndst, const std::byte* src, std::size_t bytes) {
  if (bytes == 0 || ndst == 0) return;
  std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(src);
  for (int d = 0; d < ndst; ++d) bits |= reinterpret_cast<std::uintptr_t>(dst[d]);
  const std::size_t tid = threadIdx.x;
  const std::size_t stride = blockDim.x;
  std::size_t done = 0;
  if (bits % 16 == 0) {
    constexpr int kUnroll = 4;
    const uint4* s = reinterpret_cast<const uint4*>(src);
    const std::size_t packs = bytes / 16;
    std::size_t k = tid;
    for (; k + (kUnroll - 1) * stride < packs; k += kUnroll * stride) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = loadCg(s + k + u * stride);
      for (int d = 0; d < ndst; ++d) {
        uint4* o = reinterpret_cast<uint4*>(dst[d]);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) o[k + u * stride] = v[u];
      }
    }
    for (; k < packs; k += stride) {
      const uint4 v = loadCg(s + k);
      for (int d = 0; d < ndst; ++d) reinterpret_cast<uint4*>(dst[d])[k] = v;
    }
    done = packs * 16;
  } else if (bits % 4 == 0) {
    const std::uint32_t* s = reinterpret_cast<const std::uint32_t*>(src);
    const std::size_t words = bytes / 4;
    for (std::size_t k = tid; k < words; k += stride) {
      const std::uint32_t v = loadElementCg(s + k);
      for (int d = 0; d < ndst; ++d) reinterpret_cast<std::uint32_t*>(dst[d])[k] = v;
    }
    done = words * 4;
  }
  for (std::size_t k = done + tid; k < bytes; k += stride) {
    const std::byte v = static_cast<std::byte>(loadElementCg(reinterpret_cast<const unsigned char*>(src) + k));
    for (int d = 0; d < ndst; ++d) dst[d][k] = v;
  }
}

__device__ __forceinline__ void copyBytes(std::byte* dst, const std::byte* src, std::size_t bytes) {
  if (dst != src) copyToMany(&dst, 1, src, bytes);
}

/// dst[i] (and dst2[i] when not null) = op over srcs[0..nsrcs) of element i, folded in source order: every rank
/// reduces the same sources in the same order with the same code, so every rank gets the same bits.
template <typename T, typename Op>
__device__ __forceinline__ void reduceRange(typename Elem<T>::Bits* dst, typename Elem<T>::Bits* dst2,
                                            const typename Elem<T>::Bits* const* srcs, int nsrcs, std::size_t count,
                                            int avgDivisor) {
  using E = Elem<T>;
  using Bits = typename E::Bits;
  using Acc = typename E::Acc;
  using P = Pack<Bits>;
  constexpr int kLanes = P::kLanes;
  std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(dst2);
  for (int s = 0; s < nsrcs; ++s) bits |= reinterpret_cast<std::uintptr_t>(srcs[s]);
  const std::size_t packs = bits % 16 == 0 ? count / kLanes : 0;
  const std::size_t tid = threadIdx.x;
  const std::size_t stride = blockDim.x;
  for (std::size_t k = tid; k < packs; k += stride) {
    const std::size_t i = k * kLanes;
    P in[kMaxDeviceRanks];
#pragma unroll
    for (int s = 0; s < kMaxDeviceRanks; ++s) {
      if (s < nsrcs) in[s] = loadPackCg(srcs[s] + i);
    }
    P out;
#pragma unroll
    for (int j = 0; j < kLanes; ++j) {
      Acc a = E::load(in[0].lane[j]);
#pragma unroll
      for (int s = 1; s < kMaxDeviceRanks; ++s) {
        if (s < nsrcs) a = Op::combine(a, E::load(in[s].lane[j]));
      }
      out.lane[j] = E::store(Op::finish(a, avgDivisor));
    }
    storePack(dst + i, out);
    if (dst2 != nullptr) storePack(dst2 + i, out);
  }
  for (std::size_t i = packs * kLanes + tid; i < count; i += stride) {
    Acc a = E::load(loadElementCg(srcs[0] + i));
    for (int s = 1; s < nsrcs; ++s) a = Op::combine(a, E::load(loadElementCg(srcs[s] + i)));
    const Bits out = E::store(Op::finish(a, avgDivisor));
    dst[i] = out;
    if (dst2 != nullptr) dst2[i] = out;
  }
}

// ---- Kernel start and end: the round counter lives in the rank's own workspace, so that a graph replay reads
// the current value instead of one baked into its parameters.

/// The first round of this kernel, or ~0 when an earlier kernel of this channel failed (then nothing runs: the
/// host reports that failure).
__device__ __forceinline__ std::uint64_t startRounds(const Channel& ch) {
  __shared__ std::uint64_t base;
  if (threadIdx.x == 0) {
    const WorkspaceState* state = stateOf(ch);
    base = device::loadVolatile(&state->failed) != 0 ? ~std::uint64_t{0} : state->round;
  }
  __syncthreads();
  return base;
}

/// The last block to finish advances the round counter. No fence: the next kernel on the stream starts after this
/// one ends, which orders every write of this grid before its reads. A failure stops every later kernel of the
/// channel (startRounds), so the counter's value after one does not matter.
__device__ __forceinline__ void finishRounds(const Channel& ch, std::uint64_t base, std::uint32_t rounds, bool ok) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  WorkspaceState* state = stateOf(ch);
  // One block (small messages): no other block to wait for, and an atomic costs a round trip to L2.
  if (gridDim.x == 1 || atomicAdd(&state->done, 1u) == gridDim.x - 1) {
    if (gridDim.x != 1) state->done = 0;
    if (ok) state->round = base + rounds;
  }
}

/// Where round r of a collective stands.
struct Round {
  std::uint64_t number;  // global round number t
  int parity;            // which half of the inboxes
  std::uint64_t flag;    // the flag value of this round's first chunk: t * kFlagsPerRound + 1
  std::size_t w0;        // window start, in units
  std::size_t len;       // window length, in units
  std::size_t span;      // the kernel's first window: how every round is cut into pieces
};

__device__ __forceinline__ Round roundAt(const CollectiveParams& p, std::uint64_t base, std::uint32_t r) {
  const std::uint64_t t = base + r;
  const std::size_t w0 = static_cast<std::size_t>(r) * p.roundUnits;
  return {t,  static_cast<int>(t & 1u),        t * kFlagsPerRound + 1,
          w0, min(p.roundUnits, p.count - w0), min(p.roundUnits, p.count)};
}

// ---- Registered buffers (CollectiveParams::direct): peers' buffers read where they are.

/// Every rank's buffers of one call as this rank's device reaches them.
struct DirectView {
  const std::byte* send[kMaxDeviceRanks];
  std::byte* recv[kMaxDeviceRanks];
};

/// Rank `owner`'s registration `index` (+1) from `offset`, when it holds `need` bytes there (need 0: not read).
__device__ __forceinline__ bool resolveRegistered(const Channel& ch, std::uint32_t index, std::uint64_t offset,
                                                  std::uint64_t need, int owner, std::byte** out) {
  *out = nullptr;
  if (need == 0) return true;
  if (index == 0 || index > kMaxRegistrations) return false;
  const RegisteredBuffer& entry = ch.registry[index - 1];
  const std::uint64_t bytes = entry.bytes[owner];
  if (bytes < need || offset > bytes - need) return false;
  *out = entry.base[owner] + offset;
  return true;
}

/// Round t of a direct call: this rank's descriptor goes to every peer (written by the thread that raises that
/// peer's flag, so the release orders it), theirs are read back. 1: every rank's buffers are registered (`view`
/// filled in), the same answer on every rank since all read the same descriptors; 0: the call goes through the
/// inboxes instead; -1: a wait gave up. A descriptor slot is rewritten only by the sender's next call, which starts
/// after this rank's same block acknowledged this one.
inline __device__ int exchangeDirect(const CollectiveParams& p, std::uint64_t t, DirectView* view) {
  const Channel& ch = p.ch;
  const std::uint32_t peers = allPeers(ch);
  const int q = static_cast<int>(threadIdx.x);
  if (q < ch.nranks && q != ch.rank) {
    auto* dst =
        reinterpret_cast<std::uint64_t*>(ch.ws[q] + kDirectOffset + static_cast<std::size_t>(ch.rank) * kFlagStride);
    const auto* src = reinterpret_cast<const std::uint64_t*>(&p.mine);
#pragma unroll
    for (int i = 0; i < 4; ++i) dst[i] = src[i];
  }
  __syncthreads();
  const std::uint64_t flag = t * kFlagsPerRound + 1;
  signalPeers(ch, kPhaseA, peers, flag);
  if (!waitPeers(ch, kPhaseA, peers, flag, t)) return -1;
  __shared__ DirectView shared;
  __shared__ int everyone;
  if (q == 0) everyone = 1;
  __syncthreads();
  if (q < ch.nranks) {
    DirectDescriptor d = p.mine;
    if (q != ch.rank) {
      const auto* slot = reinterpret_cast<const unsigned long long*>(ch.ws[ch.rank] + kDirectOffset +
                                                                     static_cast<std::size_t>(q) * kFlagStride);
      auto* words = reinterpret_cast<unsigned long long*>(&d);
#pragma unroll
      for (int i = 0; i < 4; ++i) words[i] = __ldcg(slot + i);
    }
    std::byte* s = nullptr;
    std::byte* r = nullptr;
    const bool ok = resolveRegistered(ch, d.send, d.sendOffset, p.sendBytes, q, &s) &&
                    resolveRegistered(ch, d.recv, d.recvOffset, p.recvBytes, q, &r);
    shared.send[q] = s;
    shared.recv[q] = r;
    if (!ok) everyone = 0;
  }
  __syncthreads();
  *view = shared;
  return everyone;
}

/// Rounds a direct call takes when every buffer is registered.
__device__ __forceinline__ std::uint32_t directRounds(CollectiveKind kind) {
  return kind == CollectiveKind::kAllreduceOneShot || kind == CollectiveKind::kAllreduceTwoShot ? 2 : 1;
}

/// Waits until every peer's same block is done with this rank's buffers (flag `phase` of round t).
__device__ __forceinline__ bool peersDone(const Channel& ch, int phase, std::uint64_t t) {
  __syncthreads();
  const std::uint64_t flag = t * kFlagsPerRound + 1;
  signalPeers(ch, phase, allPeers(ch), flag);
  return waitPeers(ch, phase, allPeers(ch), flag, t);
}

// ---- The reducing kinds, in elements of T.

template <typename T, typename Op>
__device__ bool reducingRound(const CollectiveParams& p, const Round& r) {
  using Bits = typename Elem<T>::Bits;
  constexpr std::size_t kLanes = 16 / sizeof(Bits);
  constexpr std::size_t kSize = sizeof(Bits);
  const Channel& ch = p.ch;
  const int n = ch.nranks;
  const int me = ch.rank;
  const std::uint32_t peers = allPeers(ch);
  const Bits* send = static_cast<const Bits*>(p.send);
  Bits* recv = static_cast<Bits*>(p.recv);
  const Bits* srcs[kMaxDeviceRanks];
  auto inbox = [&](int owner, int sender) { return reinterpret_cast<Bits*>(slotOf(ch, owner, r.parity, sender)); };
  auto bytesOf = [&](const Bits* x) { return reinterpret_cast<const std::byte*>(x); };

  switch (p.kind) {
    case CollectiveKind::kAllreduceOneShot: {
      // Pipelined: the block's piece goes in chunks, each with its own flag. The block pushes chunk k + 1 before
      // it waits for and reduces chunk k, and raises k + 1's flag after that reduction: by then its stores have
      // drained, so the release costs little, and the link carries k + 1 while the SMs sum k. Every block raises
      // at least one flag per round, even with an empty piece: its peers' reuse of the inboxes counts on it.
      const Piece piece = pieceOf(r.span, r.len, kLanes);
      const std::size_t chunk = p.chunkUnits != 0 ? p.chunkUnits : max(piece.size(), std::size_t{1});
      const std::uint32_t chunks = static_cast<std::uint32_t>(max((piece.size() + chunk - 1) / chunk, std::size_t{1}));
      auto lo = [&](std::uint32_t k) { return piece.lo + k * chunk; };
      auto len = [&](std::uint32_t k) { return min(chunk, piece.hi - lo(k)); };
      auto push = [&](std::uint32_t k) {
        std::byte* dsts[kMaxDeviceRanks];
        int nd = 0;
        for (int q = 0; q < n; ++q) {
          if (q != me) dsts[nd++] = reinterpret_cast<std::byte*>(inbox(q, me) + lo(k));
        }
        copyToMany(dsts, nd, bytesOf(send + r.w0 + lo(k)), piece.size() == 0 ? 0 : len(k) * kSize);
      };
      push(0);
      __syncthreads();
      signalPeers(ch, kPhaseA, peers, r.flag);
      for (std::uint32_t k = 0; k < chunks; ++k) {
        if (k + 1 < chunks) push(k + 1);
        if (!waitPeers(ch, kPhaseA, peers, r.flag + k, r.number)) return false;
        if (piece.size() != 0) {
          for (int q = 0; q < n; ++q) srcs[q] = q == me ? send + r.w0 + lo(k) : inbox(me, q) + lo(k);
          reduceRange<T, Op>(recv + r.w0 + lo(k), nullptr, srcs, n, len(k), p.avgDivisor);
        }
        if (k + 1 < chunks) {
          __syncthreads();
          signalPeers(ch, kPhaseA, peers, r.flag + k + 1);
        }
      }
      return true;
    }
    case CollectiveKind::kAllreduceTwoShot: {
      // The window in n shards of `shard` units (the last ones may be short or empty); this block's piece of
      // every shard sits at the same offset [lo, hi) within it.
      const std::size_t shard = ((r.span + n - 1) / n + kLanes - 1) / kLanes * kLanes;
      const Piece piece = pieceOf(shard, shard, kLanes);
      auto shardLen = [&](int q) {
        const std::size_t start = static_cast<std::size_t>(q) * shard;
        return r.len > start ? min(shard, r.len - start) : std::size_t{0};
      };
      auto at = [&](const Bits* base, int q) { return base + r.w0 + static_cast<std::size_t>(q) * shard + piece.lo; };
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        std::byte* dst = reinterpret_cast<std::byte*>(inbox(q, me) + piece.lo);
        copyToMany(&dst, 1, bytesOf(at(send, q)), piece.sizeWithin(shardLen(q)) * kSize);
      }
      __syncthreads();
      signalPeers(ch, kPhaseA, peers, r.flag);
      if (!waitPeers(ch, kPhaseA, peers, r.flag, r.number)) return false;
      for (int q = 0; q < n; ++q) srcs[q] = q == me ? at(send, me) : inbox(me, q) + piece.lo;
      Bits* outbox = reinterpret_cast<Bits*>(slotOf(ch, me, r.parity, n)) + piece.lo;
      reduceRange<T, Op>(recv + (at(send, me) - send), outbox, srcs, n, piece.sizeWithin(shardLen(me)), p.avgDivisor);
      __syncthreads();
      signalPeers(ch, kPhaseB, peers, r.flag);
      if (!waitPeers(ch, kPhaseB, peers, r.flag, r.number)) return false;
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        const Bits* theirs = reinterpret_cast<const Bits*>(slotOf(ch, q, r.parity, n)) + piece.lo;
        copyBytes(reinterpret_cast<std::byte*>(recv + (at(send, q) - send)), bytesOf(theirs),
                  piece.sizeWithin(shardLen(q)) * kSize);
      }
      return true;
    }
    case CollectiveKind::kReduceScatter: {
      const Piece piece = pieceOf(r.span, r.len, kLanes);
      auto block = [&](int q) { return send + static_cast<std::size_t>(q) * p.count + r.w0 + piece.lo; };
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        std::byte* dst = reinterpret_cast<std::byte*>(inbox(q, me) + piece.lo);
        copyToMany(&dst, 1, bytesOf(block(q)), piece.size() * kSize);
      }
      __syncthreads();
      signalPeers(ch, kPhaseA, peers, r.flag);
      if (!waitPeers(ch, kPhaseA, peers, r.flag, r.number)) return false;
      for (int q = 0; q < n; ++q) srcs[q] = q == me ? block(me) : inbox(me, q) + piece.lo;
      reduceRange<T, Op>(recv + r.w0 + piece.lo, nullptr, srcs, n, piece.size(), p.avgDivisor);
      return true;
    }
    case CollectiveKind::kReduce: {
      const Piece piece = pieceOf(r.span, r.len, kLanes);
      const Bits* mine = send + r.w0 + piece.lo;
      const std::uint32_t rootBit = 1u << p.root;
      if (me != p.root) {
        std::byte* dst = reinterpret_cast<std::byte*>(inbox(p.root, me) + piece.lo);
        copyToMany(&dst, 1, bytesOf(mine), piece.size() * kSize);
        __syncthreads();
        signalPeers(ch, kPhaseA, rootBit, r.flag);
        return waitPeers(ch, kPhaseB, rootBit, r.flag, r.number);
      }
      if (!waitPeers(ch, kPhaseA, peers, r.flag, r.number)) return false;
      for (int q = 0; q < n; ++q) srcs[q] = q == me ? mine : inbox(me, q) + piece.lo;
      reduceRange<T, Op>(recv + r.w0 + piece.lo, nullptr, srcs, n, piece.size(), p.avgDivisor);
      __syncthreads();
      signalPeers(ch, kPhaseB, peers, r.flag);
      return true;
    }
    default:
      return false;
  }
}

/// A reducing call over registered buffers, in rounds t and t + 1. Allreduce is two-shot: each rank reduces its
/// shard from every rank's send buffer into its own recv buffer, then copies the other shards from their owners'
/// recv buffers. In place is safe: a block writes only bytes of its own buffer that its peers' same blocks have
/// finished reading (each phase ends with a flag from every peer's twin).
template <typename T, typename Op>
__device__ bool reducingDirect(const CollectiveParams& p, const DirectView& v, std::uint64_t t) {
  using Bits = typename Elem<T>::Bits;
  constexpr std::size_t kLanes = 16 / sizeof(Bits);
  constexpr std::size_t kSize = sizeof(Bits);
  const Channel& ch = p.ch;
  const int n = ch.nranks;
  const int me = ch.rank;
  const Bits* srcs[kMaxDeviceRanks];
  auto sendOf = [&](int q) { return reinterpret_cast<const Bits*>(q == me ? p.send : v.send[q]); };
  if (p.kind == CollectiveKind::kReduceScatter) {
    const Piece piece = pieceOf(p.count, p.count, kLanes);
    for (int q = 0; q < n; ++q) srcs[q] = sendOf(q) + static_cast<std::size_t>(me) * p.count + piece.lo;
    reduceRange<T, Op>(static_cast<Bits*>(p.recv) + piece.lo, nullptr, srcs, n, piece.size(), p.avgDivisor);
    return peersDone(ch, kPhaseB, t);
  }
  const std::size_t shard = ((p.count + n - 1) / n + kLanes - 1) / kLanes * kLanes;
  const Piece piece = pieceOf(shard, shard, kLanes);
  auto shardLen = [&](int q) {
    const std::size_t start = static_cast<std::size_t>(q) * shard;
    return p.count > start ? min(shard, p.count - start) : std::size_t{0};
  };
  auto at = [&](auto* base, int q) { return base + static_cast<std::size_t>(q) * shard + piece.lo; };
  Bits* recv = static_cast<Bits*>(p.recv);
  for (int q = 0; q < n; ++q) srcs[q] = at(sendOf(q), me);
  reduceRange<T, Op>(at(recv, me), nullptr, srcs, n, piece.sizeWithin(shardLen(me)), p.avgDivisor);
  if (!peersDone(ch, kPhaseB, t)) return false;
  for (int q = 0; q < n; ++q) {
    if (q == me) continue;
    copyBytes(reinterpret_cast<std::byte*>(at(recv, q)),
              reinterpret_cast<const std::byte*>(at(reinterpret_cast<const Bits*>(v.recv[q]), q)),
              piece.sizeWithin(shardLen(q)) * kSize);
  }
  return peersDone(ch, kPhaseA, t + 1);
}

/// What every collective kernel runs: rounds numbered from the channel's counter; with p.direct, first the
/// descriptor round, then `direct(view, t)` over the registered buffers, or the rounds (`round(Round)`) one later.
template <typename DirectFn, typename RoundFn>
__device__ __forceinline__ void runCollective(const CollectiveParams& p, DirectFn direct, RoundFn round) {
  const std::uint64_t base = startRounds(p.ch);
  if (base == ~std::uint64_t{0}) return;
  bool ok = true;
  std::uint64_t first = base;
  std::uint32_t used = p.rounds;
  if (p.direct != 0) {
    DirectView view;
    const int registered = exchangeDirect(p, base, &view);
    if (registered == 1) {
      if (blockIdx.x == 0 && threadIdx.x == 0) ++stateOf(p.ch)->registeredCalls;
      const bool done = direct(view, base);
      finishRounds(p.ch, base, directRounds(p.kind), done);
      return;
    }
    ok = registered == 0;
    first = base + 1;
    used = p.rounds + 1;
  }
  for (std::uint32_t r = 0; r < p.rounds && ok; ++r) ok = round(roundAt(p, first, r));
  finishRounds(p.ch, base, used, ok);
}

template <typename T, typename Op>
__global__ void __launch_bounds__(kCollectiveThreads) reducingCollectiveKernel(const CollectiveParams p) {
  runCollective(
      p, [&](const DirectView& view, std::uint64_t t) { return reducingDirect<T, Op>(p, view, t); },
      [&](const Round& r) { return reducingRound<T, Op>(p, r); });
}

}  // namespace braid::cuda::kernels::detail

#include "cuda/kernels/ll_allreduce.cuh"

namespace braid::cuda::kernels::detail {

// ---- Lookup of the reducing kernels, as reduce_kernels.cuh does for the plain reductions.

template <typename T, template <typename> class Op>
const void* reducingKernelAddress(bool ll) {
  using Acc = typename Elem<T>::Acc;
  if (ll) return reinterpret_cast<const void*>(&llAllreduceKernel<T, Op<Acc>>);
  return reinterpret_cast<const void*>(&reducingCollectiveKernel<T, Op<Acc>>);
}

template <typename T>
const void* reducingKernelForType(DeviceOp op, bool ll) {
  constexpr bool kBool = std::is_same_v<T, device::Bool8>;
  constexpr bool kInteger = std::is_integral_v<typename Elem<T>::Acc> && !kBool;
  if constexpr (kBool || kInteger) {
    switch (op) {
      case DeviceOp::kBand:
        return reducingKernelAddress<T, device::BandOp>(ll);
      case DeviceOp::kBor:
        return reducingKernelAddress<T, device::BorOp>(ll);
      case DeviceOp::kBxor:
        return reducingKernelAddress<T, device::BxorOp>(ll);
      default:
        break;
    }
  }
  if constexpr (!kBool) {
    switch (op) {
      case DeviceOp::kSum:
        return reducingKernelAddress<T, device::SumOp>(ll);
      case DeviceOp::kProd:
        return reducingKernelAddress<T, device::ProdOp>(ll);
      case DeviceOp::kMin:
        return reducingKernelAddress<T, device::MinOp>(ll);
      case DeviceOp::kMax:
        return reducingKernelAddress<T, device::MaxOp>(ll);
      case DeviceOp::kAvg:
        return reducingKernelAddress<T, device::AvgOp>(ll);
      default:
        break;
    }
  }
  return nullptr;
}

extern template const void* reducingKernelForType<device::Bool8>(DeviceOp, bool);
extern template const void* reducingKernelForType<std::int8_t>(DeviceOp, bool);
extern template const void* reducingKernelForType<std::uint8_t>(DeviceOp, bool);
extern template const void* reducingKernelForType<std::int32_t>(DeviceOp, bool);
extern template const void* reducingKernelForType<std::uint32_t>(DeviceOp, bool);
extern template const void* reducingKernelForType<std::int64_t>(DeviceOp, bool);
extern template const void* reducingKernelForType<std::uint64_t>(DeviceOp, bool);
extern template const void* reducingKernelForType<__half>(DeviceOp, bool);
extern template const void* reducingKernelForType<__nv_bfloat16>(DeviceOp, bool);
extern template const void* reducingKernelForType<float>(DeviceOp, bool);
extern template const void* reducingKernelForType<double>(DeviceOp, bool);
extern template const void* reducingKernelForType<__nv_fp8_e4m3>(DeviceOp, bool);
extern template const void* reducingKernelForType<__nv_fp8_e5m2>(DeviceOp, bool);

}  // namespace braid::cuda::kernels::detail
