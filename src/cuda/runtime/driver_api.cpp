#include "cuda/runtime/driver_api.hpp"

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

#include "base/error.hpp"
#include "cuda/runtime/cuda_check.hpp"

namespace braid::cuda {

namespace {

// 12000: the ABI version of these entry points (every one of them exists unchanged since CUDA 10.2/11, except
// cuStreamBatchMemOp, whose version 12000 is the _v2 of CUDA 11.7).
constexpr unsigned kEntryPointVersion = 12000;

template <typename Fn>
void fetch(Fn& fn, const char* symbol) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t status =
      cudaGetDriverEntryPointByVersion(symbol, &address, kEntryPointVersion, cudaEnableDefault, &found);
  if (status != cudaSuccess) (void)cudaGetLastError();
  checkCuda(status, strCat("cudaGetDriverEntryPointByVersion(", symbol, ")").c_str());
  if (found != cudaDriverEntryPointSuccess || address == nullptr) {
    fail(ErrorCode::kUnavailable, {}, "the CUDA driver has no ", symbol, " (driver too old?)");
  }
  fn = reinterpret_cast<Fn>(address);
}

}  // namespace

const DriverApi& driverApi() {
  static DriverApi api;
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    try {
      fetch(api.memGetAllocationGranularity, "cuMemGetAllocationGranularity");
      fetch(api.memCreate, "cuMemCreate");
      fetch(api.memRelease, "cuMemRelease");
      fetch(api.memAddressReserve, "cuMemAddressReserve");
      fetch(api.memAddressFree, "cuMemAddressFree");
      fetch(api.memMap, "cuMemMap");
      fetch(api.memUnmap, "cuMemUnmap");
      fetch(api.memSetAccess, "cuMemSetAccess");
      fetch(api.memExportToShareableHandle, "cuMemExportToShareableHandle");
      fetch(api.memImportFromShareableHandle, "cuMemImportFromShareableHandle");
      fetch(api.memRetainAllocationHandle, "cuMemRetainAllocationHandle");
      fetch(api.memGetAddressRange, "cuMemGetAddressRange");
      fetch(api.getErrorString, "cuGetErrorString");
      fetch(api.launchKernel, "cuLaunchKernel");
      fetch(api.streamBatchMemOp, "cuStreamBatchMemOp");
      fetch(api.pointerGetAttributes, "cuPointerGetAttributes");
      fetch(api.deviceGet, "cuDeviceGet");
      fetch(api.deviceGetAttribute, "cuDeviceGetAttribute");
    } catch (const Error& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) fail(ErrorCode::kUnavailable, {}, failure);
  return api;
}

void checkDriver(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* text = nullptr;
  if (driverApi().getErrorString) driverApi().getErrorString(result, &text);
  fail(result == CUDA_ERROR_NOT_SUPPORTED ? ErrorCode::kUnavailable : ErrorCode::kInternal, {}, what, ": CUDA error ",
       static_cast<int>(result), text ? strCat(" (", text, ")") : std::string());
}

}  // namespace braid::cuda
