#include "cuda/runtime/ipc_allocation.hpp"

#include <cuda_runtime_api.h>

#include <cstring>
#include <utility>

#include "base/error.hpp"
#include "cuda/runtime/cuda_check.hpp"

namespace braid::cuda {

static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(IpcHandle), "a cudaIpcMemHandle_t is 64 bytes");

IpcAllocation IpcAllocation::create(std::size_t bytes, int device) {
  (void)device;  // the current device: the caller made it so
  IpcAllocation a;
  checkCuda(cudaMalloc(&a.data_, bytes), strCat("cudaMalloc(", bytes, " bytes of shared workspace)").c_str());
  a.bytes_ = bytes;
  return a;
}

IpcAllocation::IpcAllocation(IpcAllocation&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

IpcAllocation& IpcAllocation::operator=(IpcAllocation&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) (void)cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

IpcAllocation::~IpcAllocation() {
  if (data_ != nullptr) (void)cudaFree(data_);
}

IpcHandle IpcAllocation::handle() const {
  cudaIpcMemHandle_t h{};
  checkCuda(cudaIpcGetMemHandle(&h, data_), "cudaIpcGetMemHandle(workspace)");
  IpcHandle out{};
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

IpcMapping IpcMapping::open(const IpcHandle& handle, const char* what) {
  cudaIpcMemHandle_t h{};
  std::memcpy(&h, handle.data(), sizeof h);
  IpcMapping m;
  const cudaError_t status = cudaIpcOpenMemHandle(&m.data_, h, cudaIpcMemLazyEnablePeerAccess);
  if (status != cudaSuccess) (void)cudaGetLastError();
  checkCuda(status, strCat("cudaIpcOpenMemHandle(", what, ")").c_str());
  return m;
}

IpcMapping::IpcMapping(IpcMapping&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}

IpcMapping& IpcMapping::operator=(IpcMapping&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) (void)cudaIpcCloseMemHandle(data_);
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

IpcMapping::~IpcMapping() {
  if (data_ != nullptr) (void)cudaIpcCloseMemHandle(data_);
}

}  // namespace braid::cuda
