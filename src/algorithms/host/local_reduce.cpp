// Reducing collectives over local rounds: allreduce (direct, rsag), reduce, reduce-scatter.
#include "algorithms/host/contribution.hpp"
#include "algorithms/host/copy.hpp"
#include "algorithms/host/local_collectives.hpp"
#include "algorithms/host/reduce_cpu.hpp"
#include "algorithms/host/round_sync.hpp"
#include "algorithms/patterns/partition.hpp"
#include "base/error.hpp"

namespace braid::host {

namespace {

// Block boundaries of the reduce-scatter phase fall on 64-byte multiples so each rank's kernel starts aligned.
std::size_t alignElements(std::size_t elementBytes) { return 64 / elementBytes; }

}  // namespace

std::vector<tuning::AlgorithmDescriptor> localAllreduceAlgorithms() {
  using tuning::Algorithm, tuning::Collective, tuning::Link, tuning::Schedule;
  return {
      {.id = Algorithm::kShmDirect,
       .name = "direct",
       .collective = Collective::kAllreduce,
       .link = Link::kShm,
       .schedule = Schedule::kDirect,
       .how = "one round per slot: every rank reduces every peer's input"},
      // With one rank there is nothing to scatter.
      {.id = Algorithm::kShmRsag,
       .name = "rsag",
       .collective = Collective::kAllreduce,
       .link = Link::kShm,
       .schedule = Schedule::kTwoShot,
       .minRanks = 2,
       .pipelined = true,
       .how = "reduce-scatter then allgather, two rounds per slot: each rank reduces 1/n of the data"},
  };
}

LocalCollectives::LocalCollectives(transport::LocalFabric& fabric, const Options& options)
    : fabric_(fabric),
      options_(options),
      team_(options.threads, options.spinMicros),
      pieceSources_(static_cast<std::size_t>(team_.threads()),
                    std::vector<const void*>(static_cast<std::size_t>(fabric.size()))),
      singleCopyBlocks_(tuning::shmSingleCopyBlocks(fabric.slotBytes())) {
  singleCopy_.read = options.readPeerMemory;
}

void LocalCollectives::reduceInto(void* dst, const void* const* sources, std::size_t count, DataType type, ReduceOp op,
                                  bool stream) const {
  if (stream) {
    reduceSourcesStreaming(dst, sources, size(), count, type, op.kind, size());
  } else if (count > 0) {
    // The sources are slots and the caller's checked buffers: only (type, op) wants checking, and a small call's
    // reduction would spend as long in reduceSources' checks as in its arithmetic.
    reduceKernelFor(type, op.kind)(dst, sources, size(), count, size(), false);
  }
}

void LocalCollectives::reduceSlots(void* dst, std::size_t count, DataType type, ReduceOp op, const RoundSync& sync,
                                   bool fromPayload, bool stream) {
  std::vector<const void*>& sources = pieceSources_[0];  // the calling thread's
  for (int r = 0; r < size(); ++r) sources[static_cast<std::size_t>(r)] = fromPayload ? sync.payload(r) : sync.slot(r);
  reduceInto(dst, sources.data(), count, type, op, stream);
}

void LocalCollectives::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                 tuning::Algorithm algo, const OpEnv& env) {
  reduce(send, recv, count, type, op, /*root=*/-1, algo, env);  // a reduce whose result every rank keeps
}

// root < 0: every rank receives the result (allreduce); otherwise only root does.
void LocalCollectives::reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                              tuning::Algorithm algo, const OpEnv& env) {
  if (algo == tuning::Algorithm::kShmDirect) {
    allreduceDirect(send, recv, count, type, op, root, env);
  } else {
    allreduceRsag(send, recv, count, type, op, root, env);
  }
}

// root < 0: every rank receives the result (allreduce); otherwise only root does (reduce).
void LocalCollectives::allreduceDirect(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                       int root, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const Collective c = root < 0 ? Collective::kAllreduce : Collective::kReduce;
  RoundSync sync(fabric_, round_, describeCall(c, env.context.seq, type, count, root, op.kind), env);
  const std::size_t chunk = sync.slotBytes() / esz;
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  // A few bytes ride on the round's cache line with its counter: one cache-line transfer per peer.
  const bool tiny = count * esz <= transport::kRoundPayloadBytes;
  const bool stream = streams(count * esz);
  std::size_t done = 0;
  do {
    const std::size_t n = count - done < chunk ? count - done : chunk;
    contribute(tiny ? sync.nextPayload() : sync.nextSlot(), in + done * esz, n, type, op);
    const bool keeps = root < 0 || root == rank();
    if (keeps && !tiny) sync.expectRead(0, n * esz);
    sync.exchange();
    if (keeps) reduceSlots(out + done * esz, n, type, op, sync, tiny, stream);
    done += n;
  } while (done < count);
}

void LocalCollectives::allreduceRsag(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                     int root, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const Collective c = root < 0 ? Collective::kAllreduce : Collective::kReduce;
  RoundSync sync(fabric_, round_, describeCall(c, env.context.seq, type, count, root, op.kind), env);
  const std::size_t chunk = sync.slotBytes() / esz;
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  const int n = size();
  const std::size_t align = alignElements(esz);
  // Unscaled, this rank's own block is reduced from its input where it lies: the peers read every block of its slot
  // but that one, so it is not copied there (a copy in and a read less per element of the block).
  const bool ownBlockInPlace = !scales(op);
  const bool stream = streams(count * esz);
  const bool keeps = root < 0 || root == rank();
  std::size_t done = 0;
  do {
    const std::size_t len = count - done < chunk ? count - done : chunk;
    const auto mine = patterns::alignedBlockOf(len, n, rank(), align);
    const std::byte* chunkIn = in + done * esz;
    std::byte* slot = sync.nextSlot();
    const patterns::Block notCopied = ownBlockInPlace ? mine : patterns::Block{mine.offset, 0};
    auto copyIn = [&](std::size_t begin, std::size_t end, int) {
      patterns::aroundGap(begin, end, notCopied, [&](std::size_t first, std::size_t last) {
        contribute(slot + first * esz, chunkIn + first * esz, last - first, type, op);
      });
    };
    cut(len - notCopied.count, esz, copyIn);
    sync.exchange();
    // Reduce-scatter: this rank reduces its block of the chunk into its next slot, at the same offset, and copies
    // each piece out while it is still in its core's cache (before the round, not after, when the peers' blocks come).
    std::byte* reduced = sync.nextSlot() + mine.offset * esz;
    auto reduceMine = [&](std::size_t begin, std::size_t end, int worker) {
      std::vector<const void*>& sources = pieceSources_[static_cast<std::size_t>(worker)];
      const std::size_t at = (mine.offset + begin) * esz;
      for (int r = 0; r < n; ++r) sources[static_cast<std::size_t>(r)] = sync.slot(r) + at;
      if (ownBlockInPlace) sources[static_cast<std::size_t>(rank())] = chunkIn + at;
      reduceInto(reduced + begin * esz, sources.data(), end - begin, type, op, /*stream=*/false);
      if (keeps) copyOut(out + done * esz + at, reduced + begin * esz, (end - begin) * esz, stream);
    };
    cut(mine.count, esz, reduceMine);
    sync.exchange();
    // Allgather (or gather to root) of the peers' reduced blocks: the pass is the chunk less this rank's block, each
    // piece copied from the slots of the ranks whose blocks it crosses.
    auto gather = [&](std::size_t begin, std::size_t end, int) {
      patterns::aroundGap(begin, end, mine, [&](std::size_t first, std::size_t last) {
        for (int r = 0; r < n; ++r) {
          const auto block = patterns::alignedBlockOf(len, n, r, align);
          const std::size_t from = std::max(first, block.offset);
          const std::size_t to = std::min(last, block.end());
          if (r == rank() || from >= to) continue;
          copyOut(out + (done + from) * esz, sync.slot(r) + from * esz, (to - from) * esz, stream);
        }
      });
    };
    if (keeps) cut(len - mine.count, esz, gather);
    done += len;
  } while (done < count);
}

void LocalCollectives::reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                                     const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const int n = size();
  RoundSync sync(fabric_, round_,
                 describeCall(Collective::kReduceScatter, env.context.seq, type, recvCount, -1, op.kind), env);
  // Each round carries the same sub-range of all n blocks.
  const std::size_t chunk = sync.slotBytes() / (esz * static_cast<std::size_t>(n));
  if (chunk == 0) fail(ErrorCode::kUnavailable, env.context, "BRAID_SHM_SLOT_BYTES too small for ", n, " ranks");
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  const bool stream = streams(recvCount * esz);
  std::size_t done = 0;
  do {
    const std::size_t len = recvCount - done < chunk ? recvCount - done : chunk;
    std::byte* slot = sync.nextSlot();
    // Into the slot: this round's part of every rank's block, the pass running over the n parts end to end.
    auto copyIn = [&](std::size_t begin, std::size_t end, int) {
      patterns::forEachBlockIn(begin, end, len, [&](std::size_t j, std::size_t first, std::size_t last) {
        contribute(slot + (j * chunk + first) * esz, in + (j * recvCount + done + first) * esz, last - first, type, op);
      });
    };
    cut(len * static_cast<std::size_t>(n), esz, copyIn);
    const std::size_t mine = static_cast<std::size_t>(rank()) * chunk * esz;
    sync.expectRead(mine, len * esz);
    sync.exchange();
    auto reduceMine = [&](std::size_t begin, std::size_t end, int worker) {
      std::vector<const void*>& sources = pieceSources_[static_cast<std::size_t>(worker)];
      for (int r = 0; r < n; ++r) sources[static_cast<std::size_t>(r)] = sync.slot(r) + mine + begin * esz;
      reduceInto(out + (done + begin) * esz, sources.data(), end - begin, type, op, stream);
    };
    cut(len, esz, reduceMine);
    done += len;
  } while (done < recvCount);
}

}  // namespace braid::host
