#include "algorithms/device/leader.hpp"

#include <algorithm>

#include "algorithms/device/call_stream.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "base/logging.hpp"
#include "cuda/kernels/collective_kernels.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_reduce.hpp"
#include "cuda/runtime/stream_writes.hpp"

namespace braid::device {

namespace {

using cuda::checkCuda;
using cuda::StreamWord;

constexpr int kLeader = 0;
// Allocations of one follower the leader keeps open: a training step's buffers come from a caching allocator's
// few segments, so this many are rarely all in use; past it the least recently used is closed and opened again.
constexpr std::size_t kLentSlots = 32;
// What release() writes: past any call number, so every wait on the word ends.
constexpr std::uint64_t kReleased = std::uint64_t{1} << 62;

bool overlaps(const void* a, const void* b, std::size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

// A premul_sum is a sum once every input is scaled.
ReduceKind reducedKind(ReduceOp op) { return op.kind == ReduceKind::kPremulSum ? ReduceKind::kSum : op.kind; }
double scaleOf(ReduceOp op) { return op.kind == ReduceKind::kPremulSum ? op.scale : 1.0; }

}  // namespace

bool LeaderCollectives::supported() { return cuda::streamWordsSupported(); }

LeaderCollectives::LeaderCollectives(Engine& host, const DeviceChannel& channel, int rank, int size)
    : host_(host),
      channel_(channel),
      rank_(rank),
      size_(size),
      fallback_(host, channel, rank, size),
      lender_(kLentSlots),
      arrivals_(static_cast<std::size_t>(size)),
      inputs_(static_cast<std::size_t>(size)) {
  if (rank_ == kLeader) {
    borrowers_.resize(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) {
      if (r != kLeader) borrowers_[static_cast<std::size_t>(r)] = std::make_unique<cuda::BufferBorrower>(kLentSlots);
    }
  }
  checkCuda(cudaStreamCreateWithFlags(&releaseStream_, cudaStreamNonBlocking), "cudaStreamCreate(leader release)");
}

LeaderCollectives::~LeaderCollectives() {
  borrowers_.clear();  // the engine waited for the GPU before destroying this
  if (scratch_ != nullptr) (void)cudaFree(scratch_);
  if (releaseStream_ != nullptr) (void)cudaStreamDestroy(releaseStream_);
}

std::uint64_t* LeaderCollectives::word(int waiter, int sender) const {
  return reinterpret_cast<std::uint64_t*>(channel_.channel().ws[waiter] + cuda::kernels::kStreamWordOffset +
                                          static_cast<std::size_t>(sender) * cuda::kernels::kFlagStride);
}

void LeaderCollectives::release() {
  if (released_.exchange(true)) return;
  // Any thread (the engine's watchdog, an abort): the channel's GPU current for the writes, the caller's back after.
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  if (previous != channel_.device()) (void)cudaSetDevice(channel_.device());
  std::vector<StreamWord> words;
  for (int p = 0; p < size_; ++p) {
    if (p != rank_) words.push_back({StreamWord::Kind::kWrite, word(rank_, p), kReleased});
  }
  try {
    cuda::queueStreamWords(words.data(), words.size(), releaseStream_, "cuStreamBatchMemOp(release the leader path)");
  } catch (const Error& e) {
    logLine(LogLevel::kWarn, rank_, strCat("could not release this rank's stream on the leader path: ", e.message()));
  }
  (void)cudaGetLastError();
  if (previous >= 0 && previous != channel_.device()) (void)cudaSetDevice(previous);
}

bool LeaderCollectives::meet(const Arrival& own, const OpEnv& env) {
  host_.allgather(&own, arrivals_.data(), sizeof(Arrival), DataType::kUint8, env);
  requireSameCall(arrivals_.data(), sizeof(Arrival), size_, env);
  bool lent = true;
  bool fresh = false;
  for (const Arrival& a : arrivals_) {
    lent = lent && a.lent != 0;
    fresh = fresh || a.send.fresh != 0 || a.recv.fresh != 0;
  }
  if (!lent) return false;
  if (!fresh) return true;
  // The leader says whether it opened every new handle; a refusal sends every rank to the fallback.
  std::uint8_t opened = 1;
  if (rank_ == kLeader) {
    try {
      for (int r = 0; r < size_; ++r) {
        if (r == kLeader) continue;
        cuda::BufferBorrower& b = *borrowers_[static_cast<std::size_t>(r)];
        const Arrival& a = arrivals_[static_cast<std::size_t>(r)];
        if (a.send.id != 0) b.take(a.send, streamOf(env));
        if (a.recv.id != 0) b.take(a.recv, streamOf(env));
      }
    } catch (const Error& e) {
      opened = 0;
      logLine(LogLevel::kWarn, rank_,
              strCat(env.context.op, ": could not open a peer's buffer (", e.message(),
                     "): this call takes the fallback path"));
    }
  }
  std::vector<std::uint8_t> verdicts(static_cast<std::size_t>(size_));
  host_.allgather(&opened, verdicts.data(), 1, DataType::kUint8, env);
  return verdicts[kLeader] != 0;
}

LeaderCollectives::Role LeaderCollectives::arrive(const CallShape& shape, const Mine& mine, double scale,
                                                  const OpEnv& env) {
  const cudaStream_t stream = streamOf(env);
  mine_ = mine;
  Arrival own{};
  own.shape = shape;
  own.scale = scale;
  own.lent = 1;
  if (rank_ != kLeader) {
    if (mine.send != nullptr) own.lent &= lender_.lend(mine.send, mine.sendBytes, &own.send) ? 1U : 0U;
    if (own.lent != 0 && mine.recv != nullptr) own.lent &= lender_.lend(mine.recv, mine.recvBytes, &own.recv) ? 1U : 0U;
  }
  // A slot the borrower never opened must be named fresh again: after a fallback, a handle the leader refused, or
  // a call that failed before the leader took its buffers (a mismatch, a lost peer).
  auto forgetFresh = [&] {
    if (own.send.fresh != 0) lender_.forget(own.send.slot);
    if (own.recv.fresh != 0) lender_.forget(own.recv.slot);
  };
  try {
    if (!meet(own, env)) {
      forgetFresh();
      return Role::kFallback;
    }
  } catch (...) {
    forgetFresh();
    throw;
  }

  ++calls_;
  if (rank_ != kLeader) {
    const StreamWord words[] = {{StreamWord::Kind::kWrite, word(kLeader, rank_), calls_},
                                {StreamWord::Kind::kWaitAtLeast, word(rank_, kLeader), calls_}};
    cuda::queueStreamWords(words, 2, stream, "cuStreamBatchMemOp(follow the leader)");
    return Role::kFollow;
  }
  std::vector<StreamWord> waits;
  for (int r = 0; r < size_; ++r) {
    if (r != kLeader) waits.push_back({StreamWord::Kind::kWaitAtLeast, word(kLeader, r), calls_});
  }
  cuda::queueStreamWords(waits.data(), waits.size(), stream, "cuStreamBatchMemOp(wait for the followers)");
  return Role::kLead;
}

void LeaderCollectives::finish(const OpEnv& env) {
  std::vector<StreamWord> writes;
  for (int r = 0; r < size_; ++r) {
    if (r != kLeader) writes.push_back({StreamWord::Kind::kWrite, word(r, kLeader), calls_});
  }
  cuda::queueStreamWords(writes.data(), writes.size(), streamOf(env), "cuStreamBatchMemOp(release the followers)");
}

const std::byte* LeaderCollectives::sendOf(int rank) const {
  if (rank == kLeader) return static_cast<const std::byte*>(mine_.send);
  const cuda::LentBuffer& b = arrivals_[static_cast<std::size_t>(rank)].send;
  return b.id == 0 ? nullptr : borrowers_[static_cast<std::size_t>(rank)]->at(b);
}

std::byte* LeaderCollectives::recvOf(int rank) const {
  if (rank == kLeader) return static_cast<std::byte*>(const_cast<void*>(mine_.recv));
  const cuda::LentBuffer& b = arrivals_[static_cast<std::size_t>(rank)].recv;
  return b.id == 0 ? nullptr : borrowers_[static_cast<std::size_t>(rank)]->at(b);
}

std::byte* LeaderCollectives::scratch(std::size_t bytes, const OpEnv& env) {
  if (scratchBytes_ < bytes) {
    // Earlier calls' work may still read the old scratch; it only grows, so this wait is rare.
    checkCuda(cudaStreamSynchronize(streamOf(env)), "cudaStreamSynchronize(leader scratch)");
    if (scratch_ != nullptr) checkCuda(cudaFree(scratch_), "cudaFree(leader scratch)");
    scratch_ = nullptr;
    scratchBytes_ = 0;
    checkCuda(cudaMalloc(reinterpret_cast<void**>(&scratch_), bytes), "cudaMalloc(leader scratch)");
    scratchBytes_ = bytes;
  }
  return scratch_;
}

const std::byte* const* LeaderCollectives::reductionInputs(std::size_t count, DataType type, ReduceOp op,
                                                           const OpEnv& env) {
  const std::size_t bytes = count * dataTypeSize(type);
  bool scaled = false;
  for (const Arrival& a : arrivals_) scaled = scaled || (op.kind == ReduceKind::kPremulSum && a.scale != 1.0);
  std::byte* room = scaled ? scratch(bytes * static_cast<std::size_t>(size_), env) : nullptr;
  for (int r = 0; r < size_; ++r) {
    const double factor = arrivals_[static_cast<std::size_t>(r)].scale;
    const std::byte* input = sendOf(r);
    if (scaled && factor != 1.0) {
      std::byte* copy = room + static_cast<std::size_t>(r) * bytes;
      cuda::scaleCopyOnDevice(copy, input, count, type, factor, streamOf(env));
      input = copy;
    }
    inputs_[static_cast<std::size_t>(r)] = input;
  }
  return inputs_.data();
}

// ---- The collectives: every rank names the buffers the call needs from it, then the leader does the work.

void LeaderCollectives::run(const CallArgs& c, const OpEnv& env) {
  // What the call reads of this rank's send buffer and writes of its recv buffer: the buffers the leader maps.
  const std::vector<DeviceExtent> extents = deviceExtentsOf(c, rank_, size_);
  const DeviceExtent& in = extents[0];
  const DeviceExtent& out = extents[1];
  const Mine mine{in.read ? in.at : nullptr, in.read ? in.bytes : 0, out.written ? out.at : nullptr,
                  out.written ? out.bytes : 0};
  const Role role = arrive(callShape(env, c), mine, scaleOf(c.op), env);
  if (role == Role::kFallback) return fallback_.run(c, env);
  if (role == Role::kFollow) return;
  lead(c, env);
  finish(env);
}

void LeaderCollectives::lead(const CallArgs& c, const OpEnv& env) {
  const std::size_t count = c.count;
  const std::size_t bytes = count * dataTypeSize(c.type);
  const cudaStream_t stream = streamOf(env);
  switch (c.collective) {
    case Collective::kAllreduce: {
      const auto* const* inputs = reductionInputs(count, c.type, c.op, env);
      // The sum lands in the leader's output, then is copied into the others': an element is read from every input
      // before it is written, so an output that is its rank's input (in place) is safe.
      cuda::reduceSourcesOnDevice(recvOf(kLeader), reinterpret_cast<const void* const*>(inputs), size_, count, c.type,
                                  reducedKind(c.op), size_, stream);
      for (int r = 0; r < size_; ++r) {
        if (r != kLeader) copyOnStream(recvOf(r), recvOf(kLeader), bytes, stream);
      }
      return;
    }
    case Collective::kReduce: {
      const auto* const* inputs = reductionInputs(count, c.type, c.op, env);
      cuda::reduceSourcesOnDevice(recvOf(c.root), reinterpret_cast<const void* const*>(inputs), size_, count, c.type,
                                  reducedKind(c.op), size_, stream);
      return;
    }
    case Collective::kReduceScatter: {
      const auto* const* inputs = reductionInputs(count * static_cast<std::size_t>(size_), c.type, c.op, env);
      std::vector<const void*> block(static_cast<std::size_t>(size_));
      // Block r of every input makes rank r's output. In place (an output inside its rank's input, at its own
      // block) each element is read before it is written, and no other block's reduction reads it.
      for (int r = 0; r < size_; ++r) {
        for (int p = 0; p < size_; ++p) {
          block[static_cast<std::size_t>(p)] = inputs[p] + static_cast<std::size_t>(r) * bytes;
        }
        cuda::reduceSourcesOnDevice(recvOf(r), block.data(), size_, count, c.type, reducedKind(c.op), size_, stream);
      }
      return;
    }
    case Collective::kBroadcast:
      for (int r = 0; r < size_; ++r) {
        if (r != c.root) copyOnStream(recvOf(r), sendOf(c.root), bytes, stream);
      }
      return;
    case Collective::kAllgather:
      // In place, an input is its rank's own block of the output: written by nobody, copied where it already is.
      for (int r = 0; r < size_; ++r) {
        for (int p = 0; p < size_; ++p) {
          copyOnStream(recvOf(r) + static_cast<std::size_t>(p) * bytes, sendOf(p), bytes, stream);
        }
      }
      return;
    case Collective::kGather:
      for (int p = 0; p < size_; ++p) {
        copyOnStream(recvOf(c.root) + static_cast<std::size_t>(p) * bytes, sendOf(p), bytes, stream);
      }
      return;
    case Collective::kScatter:
      for (int r = 0; r < size_; ++r) {
        copyOnStream(recvOf(r), sendOf(c.root) + static_cast<std::size_t>(r) * bytes, bytes, stream);
      }
      return;
    case Collective::kAlltoall:
      return leadAlltoall(c, env);
    default:
      fail(ErrorCode::kInternal, env.context, "the leader path has no ", collectiveName(c.collective));
  }
}

void LeaderCollectives::leadAlltoall(const CallArgs& c, const OpEnv& env) {
  const std::size_t bytes = c.count * dataTypeSize(c.type);
  const std::size_t all = bytes * static_cast<std::size_t>(size_);
  const cudaStream_t stream = streamOf(env);
  // Block r of rank p's input goes to block p of rank r's output. Where some rank's input overlaps its output,
  // every input is copied aside first, so that no copy overwrites a block another copy has still to read.
  bool inPlace = false;
  for (int r = 0; r < size_; ++r) inPlace = inPlace || overlaps(sendOf(r), recvOf(r), all);
  std::byte* aside = inPlace ? scratch(all * static_cast<std::size_t>(size_), env) : nullptr;
  auto input = [&](int p) { return aside != nullptr ? aside + static_cast<std::size_t>(p) * all : sendOf(p); };
  if (aside != nullptr) {
    for (int p = 0; p < size_; ++p) copyOnStream(aside + static_cast<std::size_t>(p) * all, sendOf(p), all, stream);
  }
  for (int r = 0; r < size_; ++r) {
    for (int p = 0; p < size_; ++p) {
      copyOnStream(recvOf(r) + static_cast<std::size_t>(p) * bytes, input(p) + static_cast<std::size_t>(r) * bytes,
                   bytes, stream);
    }
  }
}

}  // namespace braid::device
