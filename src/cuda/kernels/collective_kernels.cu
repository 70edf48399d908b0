// The copying collective kernel (allgather, broadcast, alltoall, gather, scatter: units are bytes), the P2P probe
// and the lookup of the reducing kernels, whose instantiations live in collective_instances_*.cu.
#include <cstdint>

#include "cuda/kernels/collective_kernels.cuh"

namespace braid::cuda::kernels {
namespace detail {
namespace {

__device__ bool copyingRound(const CollectiveParams& p, const Round& r) {
  const Channel& ch = p.ch;
  const int n = ch.nranks;
  const int me = ch.rank;
  const std::uint32_t peers = allPeers(ch);
  const std::byte* send = static_cast<const std::byte*>(p.send);
  std::byte* recv = static_cast<std::byte*>(p.recv);
  const Piece piece = pieceOf(r.span, r.len, 16);
  const std::size_t bytes = piece.size();
  const std::size_t at = r.w0 + piece.lo;  // this piece's offset in a rank's block
  auto inbox = [&](int owner, int sender) { return slotOf(ch, owner, r.parity, sender) + piece.lo; };
  auto block = [&](auto* base, int q) { return base + static_cast<std::size_t>(q) * p.count + at; };
  const std::uint32_t rootBit = 1u << p.root;

  switch (p.kind) {
    case CollectiveKind::kAllgather: {
      std::byte* dsts[kMaxDeviceRanks];
      int nd = 0;
      for (int q = 0; q < n; ++q) {
        if (q != me) dsts[nd++] = inbox(q, me);
      }
      if (block(recv, me) != send + at) dsts[nd++] = block(recv, me);  // not in place: our own block too
      copyToMany(dsts, nd, send + at, bytes);
      __syncthreads();
      signalPeers(ch, kPhaseA, peers, r.flag);
      if (!waitPeers(ch, kPhaseA, peers, r.flag, r.number)) return false;
      for (int q = 0; q < n; ++q) {
        if (q != me) copyBytes(block(recv, q), inbox(me, q), bytes);
      }
      return true;
    }
    case CollectiveKind::kAlltoall: {
      for (int q = 0; q < n; ++q) {
        std::byte* dst = q == me ? block(recv, me) : inbox(q, me);
        copyBytes(dst, block(send, q), bytes);
      }
      __syncthreads();
      signalPeers(ch, kPhaseA, peers, r.flag);
      if (!waitPeers(ch, kPhaseA, peers, r.flag, r.number)) return false;
      for (int q = 0; q < n; ++q) {
        if (q != me) copyBytes(block(recv, q), inbox(me, q), bytes);
      }
      return true;
    }
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kScatter: {
      const bool scatter = p.kind == CollectiveKind::kScatter;
      if (me == p.root) {
        if (scatter) {
          for (int q = 0; q < n; ++q) copyBytes(q == me ? recv + at : inbox(q, me), block(send, q), bytes);
        } else {
          std::byte* dsts[kMaxDeviceRanks];
          int nd = 0;
          for (int q = 0; q < n; ++q) {
            if (q != me) dsts[nd++] = inbox(q, me);
          }
          copyToMany(dsts, nd, recv + at, bytes);
        }
        __syncthreads();
        signalPeers(ch, kPhaseA, peers, r.flag);
        return waitPeers(ch, kPhaseB, peers, r.flag, r.number);
      }
      if (!waitPeers(ch, kPhaseA, rootBit, r.flag, r.number)) return false;
      copyBytes(recv + at, inbox(me, p.root), bytes);
      __syncthreads();
      signalPeers(ch, kPhaseB, rootBit, r.flag);
      return true;
    }
    case CollectiveKind::kGather: {
      if (me != p.root) {
        std::byte* dst = inbox(p.root, me);
        copyToMany(&dst, 1, send + at, bytes);
        __syncthreads();
        signalPeers(ch, kPhaseA, rootBit, r.flag);
        return waitPeers(ch, kPhaseB, rootBit, r.flag, r.number);
      }
      copyBytes(block(recv, me), send + at, bytes);
      if (!waitPeers(ch, kPhaseA, peers, r.flag, r.number)) return false;
      for (int q = 0; q < n; ++q) {
        if (q != me) copyBytes(block(recv, q), inbox(me, q), bytes);
      }
      __syncthreads();
      signalPeers(ch, kPhaseB, peers, r.flag);
      return true;
    }
    default:
      return false;
  }
}

// Allgather over registered send buffers: each rank copies every peer's block from where it lies.
__device__ bool copyingDirect(const CollectiveParams& p, const DirectView& v, std::uint64_t t) {
  const int me = p.ch.rank;
  const Piece piece = pieceOf(p.count, p.count, 16);
  std::byte* recv = static_cast<std::byte*>(p.recv);
  for (int q = 0; q < p.ch.nranks; ++q) {
    const std::byte* src = q == me ? static_cast<const std::byte*>(p.send) : v.send[q];
    copyBytes(recv + static_cast<std::size_t>(q) * p.count + piece.lo, src + piece.lo, piece.size());
  }
  return peersDone(p.ch, kPhaseB, t);
}

__global__ void __launch_bounds__(kCollectiveThreads) copyingCollectiveKernel(const CollectiveParams p) {
  runCollective(
      p, [&](const DirectView& view, std::uint64_t t) { return copyingDirect(p, view, t); },
      [&](const Round& r) { return copyingRound(p, r); });
}

// Thread q writes this rank's word into peer q's probe slot, reads it back over the link, and keeps what it read
// in this rank's own slot (word q) for the host to check, next to the words peers wrote here.
__global__ void p2pProbeKernel(const Channel ch, std::uint32_t nonce) {
  const int q = static_cast<int>(threadIdx.x);
  if (q >= ch.nranks || q == ch.rank) return;
  const std::uint64_t word = (static_cast<std::uint64_t>(nonce) << 32) | (static_cast<std::uint64_t>(ch.rank) << 8) |
                             static_cast<std::uint64_t>(q);
  auto* theirs = reinterpret_cast<volatile std::uint64_t*>(ch.ws[q] + kProbeOffset + ch.rank * kFlagStride);
  *theirs = word;
  __threadfence_system();
  const std::uint64_t back = *theirs;
  auto* mine = reinterpret_cast<volatile std::uint64_t*>(ch.ws[ch.rank] + kProbeOffset + ch.rank * kFlagStride);
  mine[q] = back;
  __threadfence_system();
}

}  // namespace
}  // namespace detail

const void* reducingCollectiveKernel(DataType type, DeviceOp op, bool ll) {
  using detail::reducingKernelForType;
  switch (type) {
    case DataType::kBool:
      return reducingKernelForType<device::Bool8>(op, ll);
    case DataType::kInt8:
      return reducingKernelForType<std::int8_t>(op, ll);
    case DataType::kUint8:
      return reducingKernelForType<std::uint8_t>(op, ll);
    case DataType::kInt32:
      return reducingKernelForType<std::int32_t>(op, ll);
    case DataType::kUint32:
      return reducingKernelForType<std::uint32_t>(op, ll);
    case DataType::kInt64:
      return reducingKernelForType<std::int64_t>(op, ll);
    case DataType::kUint64:
      return reducingKernelForType<std::uint64_t>(op, ll);
    case DataType::kFloat16:
      return reducingKernelForType<__half>(op, ll);
    case DataType::kBFloat16:
      return reducingKernelForType<__nv_bfloat16>(op, ll);
    case DataType::kFloat32:
      return reducingKernelForType<float>(op, ll);
    case DataType::kFloat64:
      return reducingKernelForType<double>(op, ll);
    case DataType::kFloat8E4M3:
      return reducingKernelForType<__nv_fp8_e4m3>(op, ll);
    case DataType::kFloat8E5M2:
      return reducingKernelForType<__nv_fp8_e5m2>(op, ll);
  }
  return nullptr;
}

const void* copyingCollectiveKernel() { return reinterpret_cast<const void*>(&detail::copyingCollectiveKernel); }

const void* probeKernel() { return reinterpret_cast<const void*>(&detail::p2pProbeKernel); }

}  // namespace braid::cuda::kernels
