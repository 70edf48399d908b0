#include "algorithms/device/shared_gpu.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "algorithms/device/event_wait.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_reduce.hpp"

namespace braid::device {

namespace {

using cuda::checkCuda;

cudaStream_t streamOf(const host::OpEnv& env) { return reinterpret_cast<cudaStream_t>(env.stream); }

void copyOnStream(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return;
  checkCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync(shared GPU)");
}

// Elements per piece: as many as `blocks` blocks of them fit in an area, a whole number of 16-byte packs so that
// every block of the area stays aligned for the reduction kernels' vector loads.
std::size_t pieceElements(std::size_t areaBytes, std::size_t blocks, std::size_t unit) {
  const std::size_t bytes = areaBytes / blocks / 16 * 16;
  return std::max<std::size_t>(bytes / unit, 1);
}

}  // namespace

SharedGpuCollectives::SharedGpuCollectives(host::Engine& host, const DeviceChannel& channel, int rank, int size)
    : host_(host),
      channel_(channel),
      rank_(rank),
      size_(size),
      areaBytes_(static_cast<std::size_t>(size + 1) * channel.slotBytes()),
      sources_(static_cast<std::size_t>(size)),
      shapes_(static_cast<std::size_t>(size)) {
  checkCuda(cudaEventCreateWithFlags(&published_, cudaEventDisableTiming), "cudaEventCreate(shared GPU)");
}

SharedGpuCollectives::~SharedGpuCollectives() {
  if (published_ != nullptr) (void)cudaEventDestroy(published_);
}

std::byte* SharedGpuCollectives::area(int rank) const {
  return channel_.channel().ws[rank] + cuda::kernels::slotOffset(parity_, 0, size_, channel_.slotBytes());
}

void SharedGpuCollectives::begin(DataType type, std::size_t count, int root, const host::OpEnv& env) {
  shape_ = Shape{};
  std::snprintf(shape_.op, sizeof shape_.op, "%s", env.context.op.c_str());
  shape_.type = static_cast<std::uint32_t>(type);
  shape_.root = root;
  shape_.count = count;
}

void SharedGpuCollectives::meet(std::size_t offset, const host::OpEnv& env) {
  checkCuda(cudaEventRecord(published_, streamOf(env)), "cudaEventRecord(shared GPU)");
  waitForEvent(published_, env, "publishing this rank's piece");
  shape_.offset = offset;
  host_.allgather(&shape_, shapes_.data(), sizeof(Shape), DataType::kUint8, env);
  for (int r = 0; r < size_; ++r) {
    const Shape& s = shapes_[static_cast<std::size_t>(r)];
    if (std::memcmp(&s, &shapes_[0], sizeof(Shape)) == 0) continue;
    auto text = [](const Shape& x) {
      return strCat(x.op, " of ", x.count, " ", dataTypeName(static_cast<DataType>(x.type)),
                    x.root >= 0 ? strCat(" (root ", x.root, ")") : std::string(), ", piece at element ", x.offset);
    };
    ErrorContext context = env.context;
    context.peer = r;
    fail(ErrorCode::kMismatch, context, "ranks that share a GPU are in different calls: rank 0 in ",
         text(shapes_[0]), ", rank ", r, " in ", text(s));
  }
}

void SharedGpuCollectives::publish(const std::byte* src, std::size_t blocks, std::size_t stride, std::size_t elements,
                                   std::size_t unit, DataType type, double scale, cudaStream_t stream) {
  std::byte* mine = area(rank_);
  const std::size_t bytes = elements * unit;
  if (scale != 1.0) {
    for (std::size_t b = 0; b < blocks; ++b) {
      cuda::scaleCopyOnDevice(mine + b * bytes, src + b * stride * unit, elements, type, scale, stream);
    }
    return;
  }
  if (blocks == 1) return copyOnStream(mine, src, bytes, stream);
  checkCuda(cudaMemcpy2DAsync(mine, bytes, src, stride * unit, bytes, blocks, cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpy2DAsync(shared GPU)");
}

void SharedGpuCollectives::reducing(const void* send, std::size_t count, std::size_t blocks, std::size_t blockStride,
                                    DataType type, ReduceOp op, bool consume, void* recv, const host::OpEnv& env) {
  const std::size_t unit = dataTypeSize(type);
  const std::size_t per = pieceElements(areaBytes_, blocks, unit);
  // A premul_sum scales each rank's input as it is published; the reduction is then a sum.
  const double scale = op.kind == ReduceKind::kPremulSum ? op.scale : 1.0;
  const ReduceKind kind = op.kind == ReduceKind::kPremulSum ? ReduceKind::kSum : op.kind;
  const std::size_t mineBlock = blocks > 1 ? static_cast<std::size_t>(rank_) : 0;
  for (std::size_t off = 0; off < count; off += per) {
    const std::size_t n = std::min(per, count - off);
    publish(static_cast<const std::byte*>(send) + off * unit, blocks, blockStride, n, unit, type, scale, streamOf(env));
    meet(off, env);
    if (consume) {
      for (int p = 0; p < size_; ++p) sources_[static_cast<std::size_t>(p)] = area(p) + mineBlock * n * unit;
      cuda::reduceSourcesOnDevice(static_cast<std::byte*>(recv) + off * unit, sources_.data(), size_, n, type, kind,
                                  size_, streamOf(env));
    }
    parity_ ^= 1;
  }
}

template <typename Consume>
void SharedGpuCollectives::moving(const void* send, std::size_t count, std::size_t blocks, std::size_t blockStride,
                                  std::size_t unit, bool publishes, const host::OpEnv& env, Consume&& consume) {
  const std::size_t per = pieceElements(areaBytes_, blocks, unit);
  for (std::size_t off = 0; off < count; off += per) {
    const std::size_t n = std::min(per, count - off);
    if (publishes) {
      publish(static_cast<const std::byte*>(send) + off * unit, blocks, blockStride, n, unit, DataType::kUint8, 1.0,
              streamOf(env));
    }
    meet(off, env);
    consume(off, n);
    parity_ ^= 1;
  }
}

void SharedGpuCollectives::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                     const host::OpEnv& env) {
  begin(type, count, -1, env);
  reducing(send, count, 1, count, type, op, true, recv, env);
}

void SharedGpuCollectives::reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                                  const host::OpEnv& env) {
  reducing(send, count, 1, count, type, op, rank_ == root, recv, env);
}

void SharedGpuCollectives::reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type,
                                         ReduceOp op, const host::OpEnv& env) {
  begin(type, recvCount, -1, env);
  reducing(send, recvCount, static_cast<std::size_t>(size_), recvCount, type, op, true, recv, env);
}

void SharedGpuCollectives::broadcast(void* buf, std::size_t count, DataType type, int root, const host::OpEnv& env) {
  begin(type, count, root, env);
  const std::size_t unit = dataTypeSize(type);
  auto* out = static_cast<std::byte*>(buf);
  moving(buf, count, 1, count, unit, rank_ == root, env, [&](std::size_t off, std::size_t n) {
    if (rank_ != root) copyOnStream(out + off * unit, area(root), n * unit, streamOf(env));
  });
}

void SharedGpuCollectives::allgather(const void* send, void* recv, std::size_t count, DataType type,
                                     const host::OpEnv& env) {
  begin(type, count, -1, env);
  const std::size_t unit = dataTypeSize(type);
  auto* out = static_cast<std::byte*>(recv);
  moving(send, count, 1, count, unit, true, env, [&](std::size_t off, std::size_t n) {
    for (int p = 0; p < size_; ++p) {
      std::byte* dst = out + (static_cast<std::size_t>(p) * count + off) * unit;
      if (dst == static_cast<const std::byte*>(send) + off * unit) continue;  // in place: already there
      copyOnStream(dst, area(p), n * unit, streamOf(env));
    }
  });
}

void SharedGpuCollectives::gather(const void* send, void* recv, std::size_t count, DataType type, int root,
                                  const host::OpEnv& env) {
  begin(type, count, root, env);
  const std::size_t unit = dataTypeSize(type);
  auto* out = static_cast<std::byte*>(recv);
  moving(send, count, 1, count, unit, true, env, [&](std::size_t off, std::size_t n) {
    if (rank_ != root) return;
    for (int p = 0; p < size_; ++p) {
      copyOnStream(out + (static_cast<std::size_t>(p) * count + off) * unit, area(p), n * unit, streamOf(env));
    }
  });
}

void SharedGpuCollectives::scatter(const void* send, void* recv, std::size_t count, DataType type, int root,
                                   const host::OpEnv& env) {
  begin(type, count, root, env);
  const std::size_t unit = dataTypeSize(type);
  auto* out = static_cast<std::byte*>(recv);
  moving(send, count, static_cast<std::size_t>(size_), count, unit, rank_ == root, env,
         [&](std::size_t off, std::size_t n) {
           copyOnStream(out + off * unit, area(root) + static_cast<std::size_t>(rank_) * n * unit, n * unit,
                        streamOf(env));
         });
}

void SharedGpuCollectives::alltoall(const void* send, void* recv, std::size_t count, DataType type,
                                    const host::OpEnv& env) {
  begin(type, count, -1, env);
  const std::size_t unit = dataTypeSize(type);
  auto* out = static_cast<std::byte*>(recv);
  moving(send, count, static_cast<std::size_t>(size_), count, unit, true, env, [&](std::size_t off, std::size_t n) {
    for (int p = 0; p < size_; ++p) {
      copyOnStream(out + (static_cast<std::size_t>(p) * count + off) * unit,
                   area(p) + static_cast<std::size_t>(rank_) * n * unit, n * unit, streamOf(env));
    }
  });
}

}  // namespace braid::device
