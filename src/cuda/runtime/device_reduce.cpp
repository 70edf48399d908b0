// Argument checks, packing plan, grid size and launch of the reduction kernels (cuda/kernels/reduce_kernels.cu).
#include "cuda/runtime/device_reduce.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "base/data_type.hpp"
#include "base/elementwise_op.hpp"
#include "base/error.hpp"
#include "cuda/kernels/reduce_kernels.hpp"
#include "cuda/runtime/cuda_check.hpp"

namespace braid::cuda {

namespace {

using kernels::DeviceOp;
using kernels::kMaxInlineSources;
using kernels::kMaxUnrolledSources;
using kernels::kThreadsPerBlock;
using kernels::ReduceParams;
using kernels::ScaleParams;

constexpr std::size_t kPackBytes = 16;  // cuda/device/packed.cuh's kPackBytes, which nvcc alone may include
// Resident blocks per SM at kThreadsPerBlock (2048 threads per SM on sm_80 and sm_90): the grid-stride loops need
// no more blocks than fit at once.
constexpr int kBlocksPerSm = 2048 / kThreadsPerBlock;

// The same checks, messages and aliases as braid::host::reduceSources' dispatcher.
DeviceOp deviceOp(DataType type, ReduceKind kind) {
  static_assert(static_cast<int>(DeviceOp::kSum) == static_cast<int>(ElementwiseOp::kSum) &&
                static_cast<int>(DeviceOp::kProd) == static_cast<int>(ElementwiseOp::kProd) &&
                static_cast<int>(DeviceOp::kMin) == static_cast<int>(ElementwiseOp::kMin) &&
                static_cast<int>(DeviceOp::kMax) == static_cast<int>(ElementwiseOp::kMax) &&
                static_cast<int>(DeviceOp::kAvg) == static_cast<int>(ElementwiseOp::kAvg) &&
                static_cast<int>(DeviceOp::kBand) == static_cast<int>(ElementwiseOp::kBand) &&
                static_cast<int>(DeviceOp::kBor) == static_cast<int>(ElementwiseOp::kBor) &&
                static_cast<int>(DeviceOp::kBxor) == static_cast<int>(ElementwiseOp::kBxor));
  return static_cast<DeviceOp>(resolveElementwiseOp(type, kind, "reduceSourcesOnDevice"));
}

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

void checkElementAligned(const char* fn, const char* what, int index, const void* p, DataType type) {
  const std::size_t size = dataTypeSize(type);
  if (address(p) % size != 0) {
    fail(ErrorCode::kInvalidArgument, {}, fn, ": ", what, index >= 0 ? strCat(" ", index) : std::string(), " (", p,
         ") is not aligned to its ", size, "-byte ", dataTypeName(type), " elements");
  }
}

// Which elements go 16 bytes at a time: those from the first 16-byte-aligned dst element on, when every pointer
// sits at the same offset modulo 16 (then the sources' packs are aligned where dst's are).
struct PackPlan {
  std::size_t head;   // lone elements before the first pack
  std::size_t packs;  // 16-byte packs after them
  std::size_t work;   // packs + lone elements: the grid-stride loops' trip count
};

PackPlan planPacks(const void* dst, const void* const* srcs, int nsrcs, std::size_t count, std::size_t elemSize) {
  const std::uintptr_t offset = address(dst) % kPackBytes;
  for (int s = 0; s < nsrcs; ++s) {
    if (address(srcs[s]) % kPackBytes != offset) return {count, 0, count};
  }
  const std::size_t head = ((kPackBytes - offset) % kPackBytes) / elemSize;  // exact: dst is element-aligned
  if (head >= count) return {count, 0, count};
  const std::size_t lanes = kPackBytes / elemSize;
  const std::size_t packs = (count - head) / lanes;
  return {head, packs, count - packs * lanes + packs};
}

dim3 gridFor(std::size_t work) {
  int device = 0;
  checkCuda(cudaGetDevice(&device), "cudaGetDevice");
  int sms = 0;
  checkCuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
            "cudaDeviceGetAttribute(multiprocessor count)");
  const std::size_t cap = static_cast<std::size_t>(sms > 0 ? sms : 1) * kBlocksPerSm;
  const std::size_t wanted = (work + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return dim3(static_cast<unsigned>(wanted < cap ? (wanted > 0 ? wanted : 1) : cap));
}

// A failed launch also sets the runtime's last error; reset it so that it is not reported a second time by
// whoever calls cudaGetLastError next.
void launch(const void* kernel, dim3 grid, void* params, cudaStream_t stream, const std::string& what) {
  void* args[] = {params};
  const cudaError_t status = cudaLaunchKernel(kernel, grid, dim3(kThreadsPerBlock), args, 0, stream);
  if (status != cudaSuccess) (void)cudaGetLastError();
  checkCuda(status, what.c_str());
}

// The launcher's device copy of a long source list, freed in stream order after the kernel.
class SpilledSources {
 public:
  SpilledSources(const void* const* srcs, int nsrcs, cudaStream_t stream) : stream_(stream) {
    const std::size_t bytes = static_cast<std::size_t>(nsrcs) * sizeof(void*);
    checkCuda(cudaMallocAsync(&device_, bytes, stream), "cudaMallocAsync(reduce source list)");
    const cudaError_t status = cudaMemcpyAsync(device_, srcs, bytes, cudaMemcpyHostToDevice, stream);
    if (status != cudaSuccess) {
      (void)cudaFreeAsync(device_, stream);
      checkCuda(status, "cudaMemcpyAsync(reduce source list)");
    }
  }
  ~SpilledSources() { (void)cudaFreeAsync(device_, stream_); }
  SpilledSources(const SpilledSources&) = delete;
  SpilledSources& operator=(const SpilledSources&) = delete;
  const void* const* get() const { return static_cast<const void* const*>(device_); }

 private:
  void* device_ = nullptr;
  cudaStream_t stream_;
};

template <int N>
void launchReduce(const void* kernel, void* dst, const void* const* srcs, int nsrcs, std::size_t count, int avgDivisor,
                  const PackPlan& plan, cudaStream_t stream, const std::string& what) {
  ReduceParams<N> params{};
  params.dst = dst;
  params.spilled = nullptr;
  params.count = count;
  params.head = plan.head;
  params.packs = plan.packs;
  params.nsrcs = nsrcs;
  params.avgDivisor = avgDivisor;
  const dim3 grid = gridFor(plan.work);
  if (nsrcs > N) {
    const SpilledSources spilled(srcs, nsrcs, stream);
    params.spilled = spilled.get();
    launch(kernel, grid, &params, stream, what);
    return;
  }
  for (int s = 0; s < nsrcs; ++s) params.srcs.ptr[s] = srcs[s];
  launch(kernel, grid, &params, stream, what);
}

// An integral scale modulo 2^64 (as braid::host::scaleCopy): multiplying modulo 2^bits by it equals multiplying
// by the scale itself.
std::uint64_t wrapIntegralScale(double scale) {
  const double r = std::fmod(scale, 18446744073709551616.0);  // exact; |r| < 2^64
  return r < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(-r) : static_cast<std::uint64_t>(r);
}

}  // namespace

void reduceSourcesOnDevice(void* dst, const void* const* srcs, int nsrcs, std::size_t count, DataType type,
                           ReduceKind kind, int avgDivisor, cudaStream_t stream) {
  constexpr const char* kFn = "reduceSourcesOnDevice";
  const DeviceOp op = deviceOp(type, kind);
  if (nsrcs < 1) fail(ErrorCode::kInvalidArgument, {}, kFn, ": needs at least one source, got ", nsrcs);
  if (op == DeviceOp::kAvg && avgDivisor < 1) {
    fail(ErrorCode::kInvalidArgument, {}, kFn, ": avg divisor must be >= 1, got ", avgDivisor);
  }
  if (count == 0) return;
  if (dst == nullptr || srcs == nullptr) fail(ErrorCode::kInvalidArgument, {}, kFn, ": null buffer");
  for (int s = 0; s < nsrcs; ++s) {
    if (srcs[s] == nullptr) fail(ErrorCode::kInvalidArgument, {}, kFn, ": source ", s, " is null");
    checkElementAligned(kFn, "source", s, srcs[s], type);
  }
  checkElementAligned(kFn, "destination", -1, dst, type);

  const void* kernel = kernels::reduceKernelFor(type, op, nsrcs);
  if (kernel == nullptr) {
    fail(ErrorCode::kInternal, {}, kFn, ": no kernel for ", dataTypeName(type), " ", reduceKindName(kind));
  }
  const PackPlan plan = planPacks(dst, srcs, nsrcs, count, dataTypeSize(type));
  const std::string what =
      strCat(kFn, "(", dataTypeName(type), " ", reduceKindName(kind), ", ", nsrcs, " sources, ", count, " elements)");
  static_assert(kMaxUnrolledSources == 8, "one case per unrolled source count below");
  switch (nsrcs) {
    case 1:
      return launchReduce<1>(kernel, dst, srcs, nsrcs, count, avgDivisor, plan, stream, what);
    case 2:
      return launchReduce<2>(kernel, dst, srcs, nsrcs, count, avgDivisor, plan, stream, what);
    case 3:
      return launchReduce<3>(kernel, dst, srcs, nsrcs, count, avgDivisor, plan, stream, what);
    case 4:
      return launchReduce<4>(kernel, dst, srcs, nsrcs, count, avgDivisor, plan, stream, what);
    case 5:
      return launchReduce<5>(kernel, dst, srcs, nsrcs, count, avgDivisor, plan, stream, what);
    case 6:
      return launchReduce<6>(kernel, dst, srcs, nsrcs, count, avgDivisor, plan, stream, what);
    case 7:
      return launchReduce<7>(kernel, dst, srcs, nsrcs, count, avgDivisor, plan, stream, what);
    case 8:
      return launchReduce<8>(kernel, dst, srcs, nsrcs, count, avgDivisor, plan, stream, what);
    default:
      return launchReduce<kMaxInlineSources>(kernel, dst, srcs, nsrcs, count, avgDivisor, plan, stream, what);
  }
}

void scaleCopyOnDevice(void* dst, const void* src, std::size_t count, DataType type, double scale,
                       cudaStream_t stream) {
  constexpr const char* kFn = "scaleCopyOnDevice";
  if (!isValid(type)) {
    fail(ErrorCode::kInvalidArgument, {}, kFn, ": invalid data type value ", static_cast<int>(type));
  }
  std::uint64_t intScale = 0;
  if (type == DataType::kBool) {
    intScale = scale != 0 ? 1 : 0;
  } else if (isInteger(type)) {
    if (!std::isfinite(scale) || std::trunc(scale) != scale) {
      fail(ErrorCode::kInvalidArgument, {}, kFn, ": ", dataTypeName(type), " needs an integral scale, got ", scale);
    }
    intScale = wrapIntegralScale(scale);
  }
  if (count == 0) return;
  if (dst == nullptr || src == nullptr) fail(ErrorCode::kInvalidArgument, {}, kFn, ": null buffer");
  checkElementAligned(kFn, "source", -1, src, type);
  checkElementAligned(kFn, "destination", -1, dst, type);

  const void* kernel = kernels::scaleKernelFor(type);
  if (kernel == nullptr) fail(ErrorCode::kInternal, {}, kFn, ": no kernel for ", dataTypeName(type));
  const void* const srcs[] = {src};
  const PackPlan plan = planPacks(dst, srcs, 1, count, dataTypeSize(type));
  ScaleParams params{};
  params.dst = dst;
  params.src = src;
  params.count = count;
  params.head = plan.head;
  params.packs = plan.packs;
  params.floatScale = static_cast<float>(scale);
  params.doubleScale = scale;
  params.intScale = intScale;
  launch(kernel, gridFor(plan.work), &params, stream, strCat(kFn, "(", dataTypeName(type), ", ", count, " elements)"));
}

int deviceCount() noexcept {
  int count = 0;
  // cudart_static finds the driver at run time: no driver, a stub driver or no GPU is an error here, and 0.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace braid::cuda
