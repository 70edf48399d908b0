#include "algorithms/device/one_context.hpp"

#include <algorithm>

#include "algorithms/device/call_stream.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_reduce.hpp"

namespace braid::device {

namespace {

using cuda::checkCuda;

// Up to this size an out-of-place allreduce has every rank reduce all of it into its own output: the call is
// bound by latency, and this saves the copies into the peers' outputs and a stream waiting for another's kernel.
// Above it each rank reduces one slice and copies it into every output: per rank about 3 bytes of memory traffic
// per byte of data (read the slice of n inputs, write it, copy it n - 1 times) instead of n + 1.
constexpr std::size_t kEachReducesAllMaxBytes = 256 * 1024;

// Rank r's slice [lo, hi) of `count` elements: slices are whole 16-byte packs, so that every source of a slice
// shares its alignment and the reduction kernels go 16 bytes per access.
std::pair<std::size_t, std::size_t> sliceOf(int rank, int size, std::size_t count, std::size_t unit) {
  const std::size_t lanes = std::max<std::size_t>(16 / unit, 1);
  const std::size_t per =
      ((count + static_cast<std::size_t>(size) - 1) / static_cast<std::size_t>(size) + lanes - 1) / lanes * lanes;
  const std::size_t lo = std::min(count, per * static_cast<std::size_t>(rank));
  return {lo, std::min(count, lo + per)};
}

bool overlaps(const void* a, const void* b, std::size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

}  // namespace

// A rank's two events. Peers hold them through shared_ptr: a rank that leaves the last call and destroys its
// communicator cannot free an event that a peer is about to wait on.
struct OneContextCollectives::Events : std::enable_shared_from_this<Events> {
  cudaEvent_t arrived = nullptr;
  cudaEvent_t done = nullptr;
  Events() {
    checkCuda(cudaEventCreateWithFlags(&arrived, cudaEventDisableTiming), "cudaEventCreate(shared GPU)");
    checkCuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate(shared GPU)");
  }
  ~Events() {
    if (arrived != nullptr) (void)cudaEventDestroy(arrived);
    if (done != nullptr) (void)cudaEventDestroy(done);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
};

OneContextCollectives::OneContextCollectives(Engine& host, int rank, int size, const OpEnv& env)
    : host_(host),
      rank_(rank),
      size_(size),
      mine_(std::make_shared<Events>()),
      all_(static_cast<std::size_t>(size)),
      arrivals_(static_cast<std::size_t>(size)),
      sources_(static_cast<std::size_t>(size)) {
  // Every rank is a thread of this process (the channel checked): an address is valid in all of them. Each rank's
  // Events stays alive until the barrier, by which time every peer holds its own reference.
  std::vector<std::uint64_t> addresses(static_cast<std::size_t>(size));
  const auto own = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(mine_.get()));
  host_.allgather(&own, addresses.data(), 1, DataType::kUint64, env);
  for (int r = 0; r < size; ++r) {
    auto* events = reinterpret_cast<Events*>(static_cast<std::uintptr_t>(addresses[static_cast<std::size_t>(r)]));
    all_[static_cast<std::size_t>(r)] = events->shared_from_this();
  }
  host_.barrier(env);
}

OneContextCollectives::~OneContextCollectives() {
  if (scratch_ != nullptr) (void)cudaFree(scratch_);
}

void OneContextCollectives::arrive(const CallShape& shape, const void* send, const void* recv, const OpEnv& env) {
  const cudaStream_t stream = streamOf(env);
  checkCuda(cudaEventRecord(mine_->arrived, stream), "cudaEventRecord(shared GPU)");
  const Arrival mine{shape, static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(send)),
                     static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(recv))};
  host_.allgather(&mine, arrivals_.data(), sizeof(Arrival), DataType::kUint8, env);
  requireSameCall(arrivals_.data(), sizeof(Arrival), size_, env);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    checkCuda(cudaStreamWaitEvent(stream, all_[static_cast<std::size_t>(r)]->arrived, 0),
              "cudaStreamWaitEvent(shared GPU)");
  }
}

void OneContextCollectives::leave(const OpEnv& env) {
  const cudaStream_t stream = streamOf(env);
  checkCuda(cudaEventRecord(mine_->done, stream), "cudaEventRecord(shared GPU)");
  host_.barrier(env);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    checkCuda(cudaStreamWaitEvent(stream, all_[static_cast<std::size_t>(r)]->done, 0),
              "cudaStreamWaitEvent(shared GPU)");
  }
  ++calls_;
}

const std::byte* OneContextCollectives::sendOf(int rank) const {
  return reinterpret_cast<const std::byte*>(
      static_cast<std::uintptr_t>(arrivals_[static_cast<std::size_t>(rank)].send));
}

std::byte* OneContextCollectives::recvOf(int rank) const {
  return reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(arrivals_[static_cast<std::size_t>(rank)].recv));
}

void* OneContextCollectives::scratch(std::size_t bytes, const OpEnv& env) {
  if (scratchBytes_ < bytes) {
    // The previous call's peers may still read the old scratch on the GPU: this rank's stream waited for them.
    checkCuda(cudaStreamSynchronize(streamOf(env)), "cudaStreamSynchronize(shared GPU scratch)");
    if (scratch_ != nullptr) checkCuda(cudaFree(scratch_), "cudaFree(shared GPU scratch)");
    scratch_ = nullptr;
    scratchBytes_ = 0;
    checkCuda(cudaMalloc(&scratch_, bytes), "cudaMalloc(shared GPU scratch)");
    scratchBytes_ = bytes;
  }
  return scratch_;
}

const void* OneContextCollectives::scaledInput(const void* send, std::size_t count, DataType type, ReduceOp op,
                                               const OpEnv& env) {
  if (op.kind != ReduceKind::kPremulSum || op.scale == 1.0) return send;
  void* scaled = scratch(count * dataTypeSize(type), env);
  cuda::scaleCopyOnDevice(scaled, send, count, type, op.scale, streamOf(env));
  return scaled;
}

namespace {

// A premul_sum is a sum once every input is scaled.
ReduceKind reducedKind(ReduceOp op) { return op.kind == ReduceKind::kPremulSum ? ReduceKind::kSum : op.kind; }

}  // namespace

void OneContextCollectives::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                      const OpEnv& env) {
  const std::size_t unit = dataTypeSize(type);
  const cudaStream_t stream = streamOf(env);
  const void* input = scaledInput(send, count, type, op, env);
  arrive(callShape(env, type, count, -1, static_cast<std::uint32_t>(op.kind)), input, recv, env);
  auto* out = static_cast<std::byte*>(recv);
  // Every rank takes the same branch: it reads the addresses all of them brought.
  bool outOfPlace = true;
  for (int r = 0; r < size_; ++r) outOfPlace = outOfPlace && !overlaps(sendOf(r), recvOf(r), count * unit);
  if (count * unit <= kEachReducesAllMaxBytes && outOfPlace) {
    for (int r = 0; r < size_; ++r) sources_[static_cast<std::size_t>(r)] = sendOf(r);
    cuda::reduceSourcesOnDevice(out, sources_.data(), size_, count, type, reducedKind(op), size_, stream);
  } else {
    // In place, or large: this rank owns a slice, reads it from every input and writes it to every output. Its
    // output slice is read by nobody else, so in place is safe; every rank gets the same bits, made once.
    const auto [lo, hi] = sliceOf(rank_, size_, count, unit);
    if (hi > lo) {
      for (int r = 0; r < size_; ++r) sources_[static_cast<std::size_t>(r)] = sendOf(r) + lo * unit;
      cuda::reduceSourcesOnDevice(out + lo * unit, sources_.data(), size_, hi - lo, type, reducedKind(op), size_,
                                  stream);
      for (int r = 0; r < size_; ++r) {
        if (r != rank_) copyOnStream(recvOf(r) + lo * unit, out + lo * unit, (hi - lo) * unit, stream);
      }
    }
  }
  leave(env);
}

void OneContextCollectives::reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                   int root, const OpEnv& env) {
  const std::size_t unit = dataTypeSize(type);
  const void* input = scaledInput(send, count, type, op, env);
  arrive(callShape(env, type, count, root, static_cast<std::uint32_t>(op.kind)), input, recv, env);
  const auto [lo, hi] = sliceOf(rank_, size_, count, unit);
  if (hi > lo) {
    for (int r = 0; r < size_; ++r) sources_[static_cast<std::size_t>(r)] = sendOf(r) + lo * unit;
    cuda::reduceSourcesOnDevice(recvOf(root) + lo * unit, sources_.data(), size_, hi - lo, type, reducedKind(op), size_,
                                streamOf(env));
  }
  leave(env);
}

void OneContextCollectives::reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type,
                                          ReduceOp op, const OpEnv& env) {
  const std::size_t unit = dataTypeSize(type);
  const void* input = scaledInput(send, recvCount * static_cast<std::size_t>(size_), type, op, env);
  arrive(callShape(env, type, recvCount, -1, static_cast<std::uint32_t>(op.kind)), input, recv, env);
  const std::size_t at = static_cast<std::size_t>(rank_) * recvCount * unit;
  for (int r = 0; r < size_; ++r) sources_[static_cast<std::size_t>(r)] = sendOf(r) + at;
  cuda::reduceSourcesOnDevice(recv, sources_.data(), size_, recvCount, type, reducedKind(op), size_, streamOf(env));
  leave(env);
}

void OneContextCollectives::broadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env) {
  arrive(callShape(env, type, count, root, kNumReduceKinds), buf, buf, env);
  if (rank_ != root) copyOnStream(buf, sendOf(root), count * dataTypeSize(type), streamOf(env));
  leave(env);
}

void OneContextCollectives::allgather(const void* send, void* recv, std::size_t count, DataType type,
                                      const OpEnv& env) {
  const std::size_t bytes = count * dataTypeSize(type);
  arrive(callShape(env, type, count, -1, kNumReduceKinds), send, recv, env);
  for (int r = 0; r < size_; ++r) {
    copyOnStream(static_cast<std::byte*>(recv) + static_cast<std::size_t>(r) * bytes, sendOf(r), bytes, streamOf(env));
  }
  leave(env);
}

void OneContextCollectives::gather(const void* send, void* recv, std::size_t count, DataType type, int root,
                                   const OpEnv& env) {
  const std::size_t bytes = count * dataTypeSize(type);
  arrive(callShape(env, type, count, root, kNumReduceKinds), send, recv, env);
  if (rank_ == root) {
    for (int r = 0; r < size_; ++r) {
      copyOnStream(static_cast<std::byte*>(recv) + static_cast<std::size_t>(r) * bytes, sendOf(r), bytes,
                   streamOf(env));
    }
  }
  leave(env);
}

void OneContextCollectives::scatter(const void* send, void* recv, std::size_t count, DataType type, int root,
                                    const OpEnv& env) {
  const std::size_t bytes = count * dataTypeSize(type);
  arrive(callShape(env, type, count, root, kNumReduceKinds), send, recv, env);
  copyOnStream(recv, sendOf(root) + static_cast<std::size_t>(rank_) * bytes, bytes, streamOf(env));
  leave(env);
}

void OneContextCollectives::alltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) {
  const std::size_t bytes = count * dataTypeSize(type);
  const std::size_t all = bytes * static_cast<std::size_t>(size_);
  const cudaStream_t stream = streamOf(env);
  // Peers read this rank's blocks while it writes its output: an input that overlaps the output goes first to a
  // scratch copy.
  const void* input = send;
  if (overlaps(send, recv, all)) {
    input = scratch(all, env);
    copyOnStream(const_cast<void*>(input), send, all, stream);
  }
  arrive(callShape(env, type, count, -1, kNumReduceKinds), input, recv, env);
  for (int r = 0; r < size_; ++r) {
    copyOnStream(static_cast<std::byte*>(recv) + static_cast<std::size_t>(r) * bytes,
                 sendOf(r) + static_cast<std::size_t>(rank_) * bytes, bytes, stream);
  }
  leave(env);
}

}  // namespace braid::device
