#include "algorithms/device/shared_gpu.hpp"

#include <algorithm>
#include <climits>

#include "algorithms/device/call_stream.hpp"
#include "algorithms/device/event_wait.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_reduce.hpp"

namespace braid::device {

namespace {

using cuda::checkCuda;

// Elements per piece: as many as `blocks` blocks of them fit in an area, a whole number of 16-byte packs so that
// every block of the area stays aligned for the reduction kernels' vector loads.
std::size_t pieceElements(std::size_t areaBytes, std::size_t blocks, std::size_t unit) {
  const std::size_t bytes = areaBytes / blocks / 16 * 16;
  return std::max<std::size_t>(bytes / unit, 1);
}

}  // namespace

SharedGpuCollectives::SharedGpuCollectives(Engine& host, const DeviceChannel& channel, int rank, int size)
    : host_(host),
      channel_(channel),
      rank_(rank),
      size_(size),
      areaBytes_(static_cast<std::size_t>(size + 1) * channel.slotBytes()),
      sources_(static_cast<std::size_t>(size)),
      shapes_(static_cast<std::size_t>(size)) {
  checkCuda(cudaEventCreateWithFlags(&published_, cudaEventDisableTiming), "cudaEventCreate(shared GPU)");
  checkCuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreate(shared GPU)");
}

SharedGpuCollectives::~SharedGpuCollectives() {
  if (published_ != nullptr) (void)cudaEventDestroy(published_);
  if (done_ != nullptr) (void)cudaEventDestroy(done_);
}

std::byte* SharedGpuCollectives::area(int rank, int parity) const {
  return channel_.channel().ws[rank] + cuda::kernels::slotOffset(parity, 0, size_, channel_.slotBytes());
}

void SharedGpuCollectives::begin(DataType type, std::size_t count, int root, std::uint32_t kind, const OpEnv& env) {
  // The previous call's last reads of the peers' areas must come before this call's next publication on any
  // stream: its meeting is what tells the peers those reads are done.
  if (doneRecorded_) checkCuda(cudaStreamWaitEvent(streamOf(env), done_, 0), "cudaStreamWaitEvent(shared GPU)");
  shape_ = callShape(env, type, count, root, kind);
}

void SharedGpuCollectives::end(const OpEnv& env) {
  checkCuda(cudaEventRecord(done_, streamOf(env)), "cudaEventRecord(shared GPU)");
  doneRecorded_ = true;
}

int SharedGpuCollectives::meet(std::size_t offset, const OpEnv& env) {
  checkCuda(cudaEventRecord(published_, streamOf(env)), "cudaEventRecord(shared GPU)");
  waitForEvent(published_, env, "publishing this rank's piece");
  shape_.offset = offset;
  shape_.piece = pieces_;
  host_.allgather(&shape_, shapes_.data(), sizeof(CallShape), DataType::kUint8, env);
  requireSameCall(shapes_.data(), sizeof(CallShape), size_, env);
  // Moved on before the reads are queued: a rank whose reads fail stays in step with its peers.
  const int parity = parity_;
  parity_ ^= 1;
  ++pieces_;
  return parity;
}

void SharedGpuCollectives::publish(const std::byte* src, std::size_t blocks, std::size_t stride, std::size_t elements,
                                   std::size_t pitch, std::size_t unit, DataType type, double scale,
                                   cudaStream_t stream) {
  std::byte* mine = area(rank_, parity_);
  const std::size_t bytes = elements * unit;
  if (scale != 1.0) {
    for (std::size_t b = 0; b < blocks; ++b) {
      cuda::scaleCopyOnDevice(mine + b * pitch * unit, src + b * stride * unit, elements, type, scale, stream);
    }
    return;
  }
  // One 2D copy for all blocks, where CUDA takes the source's pitch (at most 2^31 - 1 bytes).
  if (blocks == 1 || stride * unit > static_cast<std::size_t>(INT32_MAX)) {
    for (std::size_t b = 0; b < blocks; ++b)
      copyOnStream(mine + b * pitch * unit, src + b * stride * unit, bytes, stream);
    return;
  }
  checkCuda(cudaMemcpy2DAsync(mine, pitch * unit, src, stride * unit, bytes, blocks, cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpy2DAsync(shared GPU)");
}

void SharedGpuCollectives::reducing(const void* send, std::size_t count, std::size_t blocks, std::size_t blockStride,
                                    DataType type, ReduceOp op, bool consume, void* recv, const OpEnv& env) {
  const std::size_t unit = dataTypeSize(type);
  const std::size_t per = pieceElements(areaBytes_, blocks, unit);
  // A premul_sum scales each rank's input as it is published; the reduction is then a sum.
  const double scale = op.kind == ReduceKind::kPremulSum ? op.scale : 1.0;
  const ReduceKind kind = op.kind == ReduceKind::kPremulSum ? ReduceKind::kSum : op.kind;
  const std::size_t mineBlock = blocks > 1 ? static_cast<std::size_t>(rank_) : 0;
  for (std::size_t off = 0; off < count; off += per) {
    const std::size_t n = std::min(per, count - off);
    publish(static_cast<const std::byte*>(send) + off * unit, blocks, blockStride, n, per, unit, type, scale,
            streamOf(env));
    const int parity = meet(off, env);
    if (!consume) continue;
    for (int p = 0; p < size_; ++p) sources_[static_cast<std::size_t>(p)] = area(p, parity) + mineBlock * per * unit;
    cuda::reduceSourcesOnDevice(static_cast<std::byte*>(recv) + off * unit, sources_.data(), size_, n, type, kind,
                                size_, streamOf(env));
  }
  end(env);
}

template <typename Consume>
void SharedGpuCollectives::moving(const void* send, std::size_t count, std::size_t blocks, std::size_t blockStride,
                                  std::size_t unit, bool publishes, const OpEnv& env, Consume&& consume) {
  const std::size_t per = pieceElements(areaBytes_, blocks, unit);
  for (std::size_t off = 0; off < count; off += per) {
    const std::size_t n = std::min(per, count - off);
    if (publishes) {
      publish(static_cast<const std::byte*>(send) + off * unit, blocks, blockStride, n, per, unit, DataType::kUint8,
              1.0, streamOf(env));
    }
    consume(meet(off, env), off, n, per);
  }
  end(env);
}

void SharedGpuCollectives::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                     const OpEnv& env) {
  begin(type, count, -1, static_cast<std::uint32_t>(op.kind), env);
  reducing(send, count, 1, count, type, op, true, recv, env);
}

void SharedGpuCollectives::reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                                  const OpEnv& env) {
  begin(type, count, root, static_cast<std::uint32_t>(op.kind), env);
  reducing(send, count, 1, count, type, op, rank_ == root, recv, env);
}

void SharedGpuCollectives::reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type,
                                         ReduceOp op, const OpEnv& env) {
  begin(type, recvCount, -1, static_cast<std::uint32_t>(op.kind), env);
  reducing(send, recvCount, static_cast<std::size_t>(size_), recvCount, type, op, true, recv, env);
}

void SharedGpuCollectives::broadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env) {
  begin(type, count, root, kNumReduceKinds, env);
  const std::size_t unit = dataTypeSize(type);
  auto* out = static_cast<std::byte*>(buf);
  moving(buf, count, 1, count, unit, rank_ == root, env, [&](int parity, std::size_t off, std::size_t n, std::size_t) {
    if (rank_ != root) copyOnStream(out + off * unit, area(root, parity), n * unit, streamOf(env));
  });
}

void SharedGpuCollectives::allgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) {
  begin(type, count, -1, kNumReduceKinds, env);
  const std::size_t unit = dataTypeSize(type);
  auto* out = static_cast<std::byte*>(recv);
  moving(send, count, 1, count, unit, true, env, [&](int parity, std::size_t off, std::size_t n, std::size_t) {
    for (int p = 0; p < size_; ++p) {
      std::byte* dst = out + (static_cast<std::size_t>(p) * count + off) * unit;
      if (dst == static_cast<const std::byte*>(send) + off * unit) continue;  // in place: already there
      copyOnStream(dst, area(p, parity), n * unit, streamOf(env));
    }
  });
}

void SharedGpuCollectives::gather(const void* send, void* recv, std::size_t count, DataType type, int root,
                                  const OpEnv& env) {
  begin(type, count, root, kNumReduceKinds, env);
  const std::size_t unit = dataTypeSize(type);
  auto* out = static_cast<std::byte*>(recv);
  moving(send, count, 1, count, unit, true, env, [&](int parity, std::size_t off, std::size_t n, std::size_t) {
    if (rank_ != root) return;
    for (int p = 0; p < size_; ++p) {
      copyOnStream(out + (static_cast<std::size_t>(p) * count + off) * unit, area(p, parity), n * unit, streamOf(env));
    }
  });
}

void SharedGpuCollectives::scatter(const void* send, void* recv, std::size_t count, DataType type, int root,
                                   const OpEnv& env) {
  begin(type, count, root, kNumReduceKinds, env);
  const std::size_t unit = dataTypeSize(type);
  auto* out = static_cast<std::byte*>(recv);
  const auto me = static_cast<std::size_t>(rank_);
  moving(send, count, static_cast<std::size_t>(size_), count, unit, rank_ == root, env,
         [&](int parity, std::size_t off, std::size_t n, std::size_t pitch) {
           copyOnStream(out + off * unit, area(root, parity) + me * pitch * unit, n * unit, streamOf(env));
         });
}

void SharedGpuCollectives::alltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) {
  begin(type, count, -1, kNumReduceKinds, env);
  const std::size_t unit = dataTypeSize(type);
  auto* out = static_cast<std::byte*>(recv);
  const auto me = static_cast<std::size_t>(rank_);
  moving(send, count, static_cast<std::size_t>(size_), count, unit, true, env,
         [&](int parity, std::size_t off, std::size_t n, std::size_t pitch) {
           for (int p = 0; p < size_; ++p) {
             copyOnStream(out + (static_cast<std::size_t>(p) * count + off) * unit, area(p, parity) + me * pitch * unit,
                          n * unit, streamOf(env));
           }
         });
}

}  // namespace braid::device
