// The LL allreduce kernel (CollectiveKind::kAllreduceLL), after NCCL's LL protocol: for messages of at most
// kLlMaxBytes, every 16-byte store carries 8 data bytes and the round's flag twice. Included by
// collective_kernels.cuh, whose helpers (rounds, failure records) it uses.
#pragma once

#include <cstdint>

namespace braid::cuda::kernels::detail {

// ---- The LL allreduce: one round, no flags, no fences. Thread i owns lines i, i + stride, ... of the message
// (8 data bytes each), taken kLlBatch at a time: it stores its batch of lines into every peer's LL inbox with the
// round's flag beside the data, then spins on the same lines of its own inboxes until every peer's copy carries
// this round's flag, and reduces them in rank order. A batch costs one trip over the link, not one per line.
// Nothing is shared between the threads of a block, so nothing waits for anything but the peers' lines.

inline constexpr int kLlBatch = 4;

__device__ __forceinline__ void storeLine(std::byte* at, uint2 data, std::uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(at), "r"(data.x), "r"(flag), "r"(data.y),
               "r"(flag)
               : "memory");
}

__device__ __forceinline__ bool loadLine(const std::byte* at, std::uint32_t flag, uint2* data) {
  std::uint32_t d0, f0, d1, f1;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
               : "l"(at)
               : "memory");
  *data = make_uint2(d0, d1);
  return f0 == flag && f1 == flag;
}

/// Waits for a line of this round from `peer`; false when the wait gave up (recorded).
__device__ __forceinline__ bool waitLine(const Channel& ch, const std::byte* at, std::uint32_t flag, int peer,
                                         std::uint64_t round, uint2* data) {
  if (loadLine(at, flag, data)) return true;
  const std::uint64_t start = device::globalTimerNs();
  for (std::uint32_t polls = 1;; ++polls) {
    if (loadLine(at, flag, data)) return true;
    if ((polls & 255u) == 0 && !device::keepWaiting(ch, start, peer, kPhaseA, round)) return false;
  }
}

template <typename T, typename Op>
__global__ void __launch_bounds__(kCollectiveThreads) llAllreduceKernel(const CollectiveParams p) {
  using E = Elem<T>;
  using Bits = typename E::Bits;
  using Acc = typename E::Acc;
  constexpr int kPerLine = static_cast<int>(8 / sizeof(Bits));
  static_assert(kPerLine >= 1, "elements of at most 8 bytes");
  union Line {
    uint2 raw;
    Bits lane[kPerLine];
  };
  const Channel& ch = p.ch;
  const Bits* send = static_cast<const Bits*>(p.send);
  Bits* recv = static_cast<Bits*>(p.recv);
  const std::size_t lines = (p.count + kPerLine - 1) / kPerLine;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto valid = [&](std::size_t line) {
    return static_cast<int>(min(static_cast<std::size_t>(kPerLine), p.count - line * kPerLine));
  };
  auto loadMine = [&](std::size_t line) {
    Line mine{};
    if (line >= lines) return mine;
    const Bits* at = send + line * kPerLine;
    if (valid(line) == kPerLine && reinterpret_cast<std::uintptr_t>(at) % 8 == 0) {
      mine.raw = *reinterpret_cast<const uint2*>(at);
    } else {
      for (int j = 0; j < valid(line); ++j) mine.lane[j] = at[j];
    }
    return mine;
  };
  // The first batch is read before the round counter, so that these loads and the counter's overlap.
  Line mine[kLlBatch];
#pragma unroll
  for (int b = 0; b < kLlBatch; ++b) mine[b] = loadMine(first + b * stride);
  const std::uint64_t base = startRounds(ch);
  if (base == ~std::uint64_t{0}) return;
  // Never 0 (what a line never written holds). The flag repeats every 2^32 - 2 rounds, an even period, so a line
  // could only be mistaken for this round's if nothing rewrote it for ~4 billion collectives.
  const std::uint32_t flag = 1u + static_cast<std::uint32_t>(base % 0xfffffffeull);
  const int parity = static_cast<int>(base & 1u);
  const int n = ch.nranks;
  const int me = ch.rank;
  auto inboxLine = [&](int owner, int sender, std::size_t line) {
    return ch.ws[owner] + llOffset(parity, sender, n, ch.slotBytes) + line * kLlLineBytes;
  };
  bool ok = true;
  for (std::size_t batch = first; batch < lines && ok; batch += kLlBatch * stride) {
    if (batch != first) {
#pragma unroll
      for (int b = 0; b < kLlBatch; ++b) mine[b] = loadMine(batch + b * stride);
    }
#pragma unroll
    for (int b = 0; b < kLlBatch; ++b) {
      const std::size_t line = batch + b * stride;
      if (line >= lines) break;
      for (int q = 0; q < n; ++q) {
        if (q != me) storeLine(inboxLine(q, me, line), mine[b].raw, flag);
      }
    }
#pragma unroll
    for (int b = 0; b < kLlBatch; ++b) {
      const std::size_t line = batch + b * stride;
      if (line >= lines || !ok) break;
      // Folded in rank order, as every rank does: the same bits everywhere.
      Acc acc[kPerLine];
      for (int q = 0; q < n && ok; ++q) {
        Line theirs;
        if (q == me) {
          theirs = mine[b];
        } else {
          ok = waitLine(ch, inboxLine(me, q, line), flag, q, base, &theirs.raw);
        }
#pragma unroll
        for (int j = 0; j < kPerLine; ++j) {
          acc[j] = q == 0 ? E::load(theirs.lane[j]) : Op::combine(acc[j], E::load(theirs.lane[j]));
        }
      }
      if (!ok) break;
      Bits* out = recv + line * kPerLine;
      for (int j = 0; j < valid(line); ++j) out[j] = E::store(Op::finish(acc[j], p.avgDivisor));
    }
  }
  finishRounds(ch, base, 1, __syncthreads_and(ok ? 1 : 0) != 0);
}

}  // namespace braid::cuda::kernels::detail
