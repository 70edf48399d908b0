#include "cuda/runtime/stream_writes.hpp"

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/error.hpp"
#include "cuda/runtime/driver_api.hpp"

namespace braid::cuda {

namespace {

// cuStreamBatchMemOp takes fewer than 256 operations per call.
constexpr std::size_t kOpsPerBatch = 255;

// Cleared at the first refusal of the driver (no stream memory operations here): every later call copies.
std::atomic<bool> supported{true};

CUstreamBatchMemOpParams writeOp(std::uintptr_t address, const std::byte* src, bool wide) {
  CUstreamBatchMemOpParams op{};
  op.writeValue.operation = wide ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
  op.writeValue.address = static_cast<CUdeviceptr>(address);
  if (wide) {
    std::memcpy(&op.writeValue.value64, src, 8);
  } else {
    std::memcpy(&op.writeValue.value, src, 4);
  }
  // Each write fences (ordered after the stream's earlier writes, as a copy would be): the batch refuses writes
  // without (CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER, an invalid argument on the H200), which sets the size limit.
  op.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
  return op;
}

}  // namespace

bool writeByStreamOps(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  const auto at = reinterpret_cast<std::uintptr_t>(dst);
  if (bytes == 0 || bytes > kStreamWriteMaxBytes || bytes % 4 != 0 || at % 4 != 0) return false;
  if (!supported.load(std::memory_order_relaxed)) return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, dst) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (attr.type != cudaMemoryTypeDevice) return false;

  // A 4-byte word first where dst is not 8-aligned, then 8-byte words, then a last 4-byte word: all built before
  // anything is queued, so that a refusal leaves the stream untouched.
  std::vector<CUstreamBatchMemOpParams> ops;
  ops.reserve(bytes / 8 + 2);
  const auto* from = static_cast<const std::byte*>(src);
  std::size_t i = 0;
  if (at % 8 != 0) {
    ops.push_back(writeOp(at, from, false));
    i = 4;
  }
  for (; i + 8 <= bytes; i += 8) ops.push_back(writeOp(at + i, from + i, true));
  if (i < bytes) ops.push_back(writeOp(at + i, from + i, false));
  const std::size_t n = ops.size();

  const DriverApi& api = driverApi();
  for (std::size_t first = 0; first < n; first += kOpsPerBatch) {
    const auto count = static_cast<unsigned>(n - first < kOpsPerBatch ? n - first : kOpsPerBatch);
    const CUresult status = api.streamBatchMemOp(reinterpret_cast<CUstream>(stream), count, ops.data() + first, 0);
    if (status == CUDA_ERROR_NOT_SUPPORTED && first == 0) {
      supported.store(false, std::memory_order_relaxed);
      return false;
    }
    checkDriver(status, "cuStreamBatchMemOp(value writes of a staged result)");
  }
  return true;
}

bool streamWordsSupported() {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  try {
    const DriverApi& api = driverApi();
    CUdevice handle = 0;
    int wide = 0;
    if (api.deviceGet(&handle, device) != CUDA_SUCCESS ||
        api.deviceGetAttribute(&wide, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, handle) != CUDA_SUCCESS) {
      return false;
    }
    return wide != 0 && supported.load(std::memory_order_relaxed);
  } catch (const Error&) {
    return false;  // a driver without the entry points
  }
}

void queueStreamWords(const StreamWord* words, std::size_t n, cudaStream_t stream, const char* what) {
  if (n == 0) return;
  if (n > kOpsPerBatch) fail(ErrorCode::kInternal, {}, what, ": ", n, " stream memory operations in one batch");
  CUstreamBatchMemOpParams ops[kOpsPerBatch];
  for (std::size_t i = 0; i < n; ++i) {
    CUstreamBatchMemOpParams op{};
    const auto address = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(words[i].address));
    if (words[i].kind == StreamWord::Kind::kWrite) {
      op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
      op.writeValue.address = address;
      op.writeValue.value64 = words[i].value;
      op.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;  // after the stream's earlier writes are visible
    } else {
      op.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
      op.waitValue.address = address;
      op.waitValue.value64 = words[i].value;
      op.waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    }
    ops[i] = op;
  }
  checkDriver(driverApi().streamBatchMemOp(reinterpret_cast<CUstream>(stream), static_cast<unsigned>(n), ops, 0), what);
}

}  // namespace braid::cuda
