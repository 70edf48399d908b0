// The collective kernels' launch interface: the workspace layout every rank shares, the plain-data channel a
// kernel reaches its peers through, and the parameter block of one collective. Shared by the kernels
// (collective_kernels.cuh) and the host launcher (algorithms/device/device_engine.cpp); compiles with the host
// compiler and nvcc alike. Kernels own no memory and do no bootstrap: transport/cuda_ipc maps the workspaces,
// algorithms/device fills these structs.
//
// How one collective runs (every kind, see collective_kernels.cuh):
//   - the data moves in rounds; a round handles a window of each rank's block, at most slotBytes per sender;
//   - a producer pushes (16-byte stores over NVLink/PCIe) its part of the window into the consumer's inbox for
//     that producer, then raises flag A at the consumer; the consumer waits for A, then reduces or copies out of
//     its own inboxes (local reads only);
//   - flag B: two-shot allreduce publishes its reduced shard (peers pull it from the outbox), one-to-many and
//     many-to-one kinds acknowledge the round to the root;
//   - every block works on its own piece of the window and waits only for the same block of its peers.
// Buffer reuse: in every round each rank hears (directly or through the root) from every peer, so when a rank
// starts round t its peers have finished round t-2; inboxes alternate between two parities by round number.
// Flags hold round * kFlagsPerRound + chunk + 1 (a round of the pipelined one-shot allreduce raises one flag per
// chunk), only ever increase, and are compared with >=, so they are never reset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "braid/types.hpp"
#include "cuda/kernels/reduce_kernels.hpp"

// Layout arithmetic both sides compute: host and device functions under nvcc, plain functions elsewhere.
#ifdef __CUDACC__
#define BRAID_HOST_DEVICE __host__ __device__
#else
#define BRAID_HOST_DEVICE
#endif

namespace braid::cuda::kernels {

/// Ranks one channel connects (the GPUs of one NVLink box).
inline constexpr int kMaxDeviceRanks = 8;
/// Blocks of one collective kernel. A block waits only for the same block of its peers, and blocks start in
/// index order, so a grid larger than what fits at once still progresses (the resident blocks of every rank are
/// a prefix). 128: an SM keeps only so many stores to a peer in flight (~5 GB/s per 512-thread block measured on
/// H200 over NVLink), so filling the link takes most of an H100/H200's 132 SMs.
inline constexpr int kMaxCollectiveBlocks = 128;
/// One flag per 128-byte line: peers writing neighbouring flags never share a line.
inline constexpr std::size_t kFlagStride = 128;
inline constexpr int kFlagPhases = 2;  // A: data pushed; B: shard published / round acknowledged
inline constexpr std::size_t kFlagsBytes =
    static_cast<std::size_t>(kFlagPhases) * kMaxDeviceRanks * kMaxCollectiveBlocks * kFlagStride;
inline constexpr std::size_t kStateOffset = kFlagsBytes;
/// The P2P probe: peer p writes its word at kProbeOffset + p * kFlagStride.
inline constexpr std::size_t kProbeOffset = kStateOffset + 4096;
/// Registered buffers: sender p writes its call's DirectDescriptor at kDirectOffset + p * kFlagStride of each peer.
inline constexpr std::size_t kDirectOffset = kProbeOffset + kMaxDeviceRanks * kFlagStride;
/// Stream words (no kernel reads them): sender p writes the word this rank's stream waits for at
/// kStreamWordOffset + p * kFlagStride (algorithms/device/leader.hpp).
inline constexpr std::size_t kStreamWordOffset = kDirectOffset + kMaxDeviceRanks * kFlagStride;
inline constexpr std::size_t kDataOffset = 512 * 1024;
static_assert(kStreamWordOffset + kMaxDeviceRanks * kFlagStride <= kDataOffset, "control area fits before the data");

/// Byte offset of flag (phase, sender, block) in the workspace of the rank that waits on it.
BRAID_HOST_DEVICE constexpr std::size_t flagOffset(int phase, int sender, int block) {
  return ((static_cast<std::size_t>(phase) * kMaxDeviceRanks + static_cast<std::size_t>(sender)) *
              kMaxCollectiveBlocks +
          static_cast<std::size_t>(block)) *
         kFlagStride;
}
/// Byte offset of a data slot: slots 0..nranks-1 are inboxes (slot s is written by rank s), slot nranks is the
/// owner's outbox (written by the owner, read by peers). Two parities alternate by round.
BRAID_HOST_DEVICE constexpr std::size_t slotOffset(int parity, int slot, int nranks, std::size_t slotBytes) {
  return kDataOffset +
         (static_cast<std::size_t>(parity) * static_cast<std::size_t>(nranks + 1) + static_cast<std::size_t>(slot)) *
             slotBytes;
}
/// The low-latency (LL) area after the data slots: per parity and sender, lines of 16 bytes that carry 8 bytes of
/// data and the round's flag twice (NCCL's LL line: each 8-byte half, {4 data bytes, flag}, is stored and loaded
/// whole), so data and its signal arrive together, with no fence and no separate flag.
inline constexpr std::size_t kLlMaxBytes = 512 * 1024;  ///< the largest message the LL kernel carries
inline constexpr std::size_t kLlLineBytes = 16;
inline constexpr std::size_t kLlSlotBytes = kLlMaxBytes / 8 * kLlLineBytes;
BRAID_HOST_DEVICE constexpr std::size_t llOffset(int parity, int sender, int nranks, std::size_t slotBytes) {
  return slotOffset(2, 0, nranks, slotBytes) +
         (static_cast<std::size_t>(parity) * static_cast<std::size_t>(nranks) + static_cast<std::size_t>(sender)) *
             kLlSlotBytes;
}
/// Workspace bytes for nranks ranks with slots of slotBytes.
BRAID_HOST_DEVICE constexpr std::size_t workspaceBytes(int nranks, std::size_t slotBytes) {
  return llOffset(2, 0, nranks, slotBytes);
}

/// Device-local state in each rank's own workspace (never written by peers).
struct WorkspaceState {
  std::uint64_t round;            ///< rounds completed by this rank's kernels since the workspace was made
  std::uint32_t done;             ///< blocks of the running kernel that finished (the last one advances `round`)
  std::uint32_t failed;           ///< set by a block that gave up: the others stop waiting
  std::uint64_t abortCheckedNs;   ///< when a waiting thread last read the host's abort flag (GPU global timer)
  std::uint64_t registeredCalls;  ///< calls that read peers' registered buffers in place (for tests and logs)
};

/// Why a kernel gave up, written once (the first block to fail) into host-mapped memory the host reads without
/// synchronising. code 0: nothing happened.
enum class KernelFailure : std::uint32_t { kNone = 0, kTimeout = 1, kAborted = 2 };
struct KernelError {
  std::uint32_t code;   ///< KernelFailure
  std::int32_t peer;    ///< the rank waited for
  std::uint32_t block;  ///< the block that waited
  std::uint32_t phase;  ///< flag A (0) or B (1)
  std::uint64_t round;  ///< the round it waited in
};

/// Buffers registered with the communicator (Communicator::registerBuffer): entry i of the table in device memory
/// holds registration i of every rank, as this rank's device maps it (bytes 0: not registered, or deregistered).
/// Registrations are collective, so an index means the same registration on every rank.
inline constexpr std::uint32_t kMaxRegistrations = 4096;
struct RegisteredBuffer {
  std::byte* base[kMaxDeviceRanks];
  std::uint64_t bytes[kMaxDeviceRanks];
};
/// Where one rank's buffers of a call lie in its registrations: index + 1 (0: not registered) and the offset in it.
struct DirectDescriptor {
  std::uint32_t send;
  std::uint32_t recv;
  std::uint64_t sendOffset;
  std::uint64_t recvOffset;
  std::uint64_t pad;
};
static_assert(sizeof(DirectDescriptor) == 32, "two 16-byte stores");

/// Plain-data handle of a rank's channel: every rank's workspace as this rank's device maps it.
struct Channel {
  std::byte* ws[kMaxDeviceRanks];
  const RegisteredBuffer* registry;  ///< kMaxRegistrations entries, device memory
  KernelError* error;                ///< host-mapped, pinned
  const std::uint32_t* abortFlag;    ///< host-mapped, pinned; non-zero: give up every wait
  std::size_t slotBytes;
  std::uint64_t timeoutNs;  ///< longest wait for one flag
  int rank;
  int nranks;
};

/// Flag values a round may use (one per chunk); a kernel never has more chunks per block and round.
inline constexpr std::uint64_t kFlagsPerRound = std::uint64_t{1} << 16;

enum class CollectiveKind : std::uint8_t {
  kAllreduceLL,       ///< one-shot through LL lines: one round, at most kLlMaxBytes (its own kernel)
  kAllreduceOneShot,  ///< every rank pushes everything to everyone and reduces locally
  kAllreduceTwoShot,  ///< reduce-scatter into inboxes, then each rank pulls the reduced shards
  kReduceScatter,
  kReduce,
  kAllgather,
  kBroadcast,
  kAlltoall,
  kGather,
  kScatter,
};

BRAID_HOST_DEVICE constexpr bool isReduction(CollectiveKind kind) {
  return kind == CollectiveKind::kAllreduceLL || kind == CollectiveKind::kAllreduceOneShot ||
         kind == CollectiveKind::kAllreduceTwoShot || kind == CollectiveKind::kReduceScatter ||
         kind == CollectiveKind::kReduce;
}

/// One collective. Units are elements of the reduction's type for the reducing kinds and bytes for the others.
/// `count`: the whole vector (allreduce), else each rank's block. A round covers `roundUnits` of it (allreduce
/// two-shot: of the whole vector, split in nranks shards), `rounds` rounds in all.
struct CollectiveParams {
  Channel ch;
  const void* send;
  void* recv;
  std::size_t count;
  std::size_t roundUnits;
  std::size_t chunkUnits;  ///< one-shot allreduce: what a block pushes between two flags; 0: its whole piece
  std::uint32_t rounds;
  int root;
  int avgDivisor;  ///< >= 1; avg only
  CollectiveKind kind;
  /// Non-zero: the kernel first exchanges DirectDescriptors (one round); when every rank's buffers the kind reads
  /// are registered, peers read them in place (no inbox, no staging copy), else the rounds above follow.
  std::uint8_t direct;
  DirectDescriptor mine;    ///< this rank's buffers in its registrations
  std::uint64_t sendBytes;  ///< what peers read of each rank's send buffer (0: nothing)
  std::uint64_t recvBytes;  ///< and of its recv buffer
};

static_assert(sizeof(CollectiveParams) <= 4096, "kernel parameters fit 4 KiB");
static_assert(std::is_trivially_copyable_v<CollectiveParams>, "copied bytewise by cudaLaunchKernel");

/// Threads per block of the collective kernels.
inline constexpr int kCollectiveThreads = 512;

/// The reducing collective kernel for (type, op) (kinds with isReduction; `ll`: the LL allreduce kernel, the only
/// one that runs kAllreduceLL), or nullptr where (type, op) has no kernel. Takes one CollectiveParams.
const void* reducingCollectiveKernel(DataType type, DeviceOp op, bool ll = false);
/// The copying collective kernel (the other kinds; units are bytes).
const void* copyingCollectiveKernel();
/// The P2P probe kernel: takes (Channel, std::uint32_t nonce); one block writes nonce ^ (rank << 8) ^ peer into
/// every peer's probe slot for this rank and reads it back.
const void* probeKernel();

}  // namespace braid::cuda::kernels
