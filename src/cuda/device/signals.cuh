// Flags between the blocks of peer GPUs: release stores and acquire loads at system scope, and bounded waits.
// A wait gives up when the host raises the channel's abort flag, when another block of the grid gave up, or after
// the channel's timeout; it then records why in host-mapped memory (first failure wins) and the kernel returns.
// Device code only: this header includes nothing from braid's host side.
#pragma once

#include <cstdint>

#include "cuda/kernels/collective_kernels.hpp"

namespace braid::cuda::device {

using kernels::Channel;
using kernels::KernelError;
using kernels::KernelFailure;
using kernels::WorkspaceState;

__device__ __forceinline__ std::uint64_t loadAcquireSys(const std::uint64_t* p) {
  std::uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void storeReleaseSys(std::uint64_t* p, std::uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ std::uint32_t loadVolatile(const std::uint32_t* p) {
  return *const_cast<const volatile std::uint32_t*>(p);
}

/// Nanoseconds of the GPU's global timer (the same clock on every SM).
__device__ __forceinline__ std::uint64_t globalTimerNs() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ std::uint64_t* flagAt(std::byte* ws, int phase, int sender, int block) {
  return reinterpret_cast<std::uint64_t*>(ws + kernels::flagOffset(phase, sender, block));
}

__device__ __forceinline__ WorkspaceState* stateOf(const Channel& ch) {
  return reinterpret_cast<WorkspaceState*>(ch.ws[ch.rank] + kernels::kStateOffset);
}

/// Records the first failure of this channel's kernels and tells the grid's other blocks to stop waiting. The
/// first is elected on the GPU's own failed word (never reset: a channel fails once): the error lies in mapped host
/// memory, where a GPU atomic is not atomic without host-native atomics (PCIe has none; compute-sanitizer's memcheck
/// refuses it). The code is written last, after the fields it stands for, so a host that sees it sees them.
__device__ __forceinline__ void recordFailure(const Channel& ch, KernelFailure why, int peer, int phase,
                                              std::uint64_t round) {
  WorkspaceState* state = stateOf(ch);
  if (atomicExch(&state->failed, 1u) != 0u) return;
  volatile KernelError* error = ch.error;
  error->peer = peer;
  error->block = blockIdx.x;
  error->phase = static_cast<std::uint32_t>(phase);
  error->round = round;
  __threadfence_system();
  error->code = static_cast<std::uint32_t>(why);
  __threadfence_system();
}

/// How often, at most, the waiting threads of one GPU read the host's abort flag.
inline constexpr std::int64_t kAbortCheckNs = 20'000;

/// What a wait checks every 256 polls; false when it must give up (the failure is then recorded). The grid's failed
/// word and the clock are on the GPU and cheap. The abort flag is host memory: every read crosses PCIe (~1 us, more
/// under a hypervisor) and reads from many warps queue behind each other. When each waiting warp read it, the 2,048
/// warps of an LL kernel whose peer was a few microseconds late stretched a 9 us allreduce to 2.2 ms on the H200s.
/// So one thread of the GPU reads it, at most every kAbortCheckNs: whichever waiting thread first finds the last
/// read that old and claims the next one.
__device__ __forceinline__ bool keepWaiting(const Channel& ch, std::uint64_t start, int peer, int phase,
                                            std::uint64_t round) {
  WorkspaceState* state = stateOf(ch);
  if (loadVolatile(&state->failed) != 0) return false;
  const std::uint64_t now = globalTimerNs();
  if (now - start > ch.timeoutNs) {
    recordFailure(ch, KernelFailure::kTimeout, peer, phase, round);
    return false;
  }
  auto* checked = reinterpret_cast<unsigned long long*>(&state->abortCheckedNs);
  const unsigned long long last = *const_cast<const volatile unsigned long long*>(checked);
  if (static_cast<std::int64_t>(now - last) >= kAbortCheckNs && atomicCAS(checked, last, now) == last &&
      loadVolatile(ch.abortFlag) != 0) {
    recordFailure(ch, KernelFailure::kAborted, peer, phase, round);
    return false;
  }
  return true;
}

/// Spins until *flag >= value; false when it gave up (the failure is recorded).
__device__ __forceinline__ bool waitFlag(const Channel& ch, const std::uint64_t* flag, std::uint64_t value, int peer,
                                         int phase, std::uint64_t round) {
  if (loadAcquireSys(flag) >= value) return true;
  const std::uint64_t start = globalTimerNs();
  for (std::uint32_t polls = 1;; ++polls) {
    if (loadAcquireSys(flag) >= value) return true;
    if ((polls & 255u) == 0 && !keepWaiting(ch, start, peer, phase, round)) return false;
  }
}

/// Raises flag `phase` of this block at every rank in `targets` (a bit per rank) to `value`. Call after a
/// __syncthreads() that follows the block's writes: the release store at system scope by thread `target` orders
/// them (cumulatively, through the barrier) before the flag.
__device__ __forceinline__ void signalPeers(const Channel& ch, int phase, std::uint32_t targets, std::uint64_t value) {
  const int t = static_cast<int>(threadIdx.x);
  if (t < ch.nranks && t != ch.rank && ((targets >> t) & 1u)) {
    storeReleaseSys(flagAt(ch.ws[t], phase, ch.rank, blockIdx.x), value);
  }
}

/// Waits until every rank in `senders` raised flag `phase` of this block to `value`, then synchronises the block
/// (so every thread may read what they wrote). False on every thread when any wait gave up.
__device__ __forceinline__ bool waitPeers(const Channel& ch, int phase, std::uint32_t senders, std::uint64_t value,
                                          std::uint64_t round) {
  const int t = static_cast<int>(threadIdx.x);
  bool ok = true;
  if (t < ch.nranks && t != ch.rank && ((senders >> t) & 1u)) {
    ok = waitFlag(ch, flagAt(ch.ws[ch.rank], phase, t, blockIdx.x), value, t, phase, round);
  }
  return __syncthreads_or(ok ? 0 : 1) == 0;
}

}  // namespace braid::cuda::device
