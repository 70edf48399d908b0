// The CUDA driver entry points braid needs beyond the runtime (virtual memory management, sharing of allocations
// between processes, and kernel launches without the runtime's per-launch lookup of the kernel), fetched through
// cudaGetDriverEntryPointByVersion: libbraid links no libcuda, so it still loads where there is no driver.
#pragma once

#include <cuda.h>

namespace braid::cuda {

struct DriverApi {
  decltype(&::cuMemGetAllocationGranularity) memGetAllocationGranularity = nullptr;
  decltype(&::cuMemCreate) memCreate = nullptr;
  decltype(&::cuMemRelease) memRelease = nullptr;
  decltype(&::cuMemAddressReserve) memAddressReserve = nullptr;
  decltype(&::cuMemAddressFree) memAddressFree = nullptr;
  decltype(&::cuMemMap) memMap = nullptr;
  decltype(&::cuMemUnmap) memUnmap = nullptr;
  decltype(&::cuMemSetAccess) memSetAccess = nullptr;
  decltype(&::cuMemExportToShareableHandle) memExportToShareableHandle = nullptr;
  decltype(&::cuMemImportFromShareableHandle) memImportFromShareableHandle = nullptr;
  decltype(&::cuMemRetainAllocationHandle) memRetainAllocationHandle = nullptr;
  decltype(&::cuMemGetAddressRange) memGetAddressRange = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuStreamBatchMemOp) streamBatchMemOp = nullptr;
  decltype(&::cuPointerGetAttributes) pointerGetAttributes = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
};

/// The driver's entry points, fetched once. Throws braid::Error (kUnavailable) naming the first one missing.
const DriverApi& driverApi();

/// Throws braid::Error (kInternal, or kUnavailable for CUDA_ERROR_NOT_SUPPORTED) when result is not CUDA_SUCCESS;
/// `what` names the call and what it was for.
void checkDriver(CUresult result, const char* what);

}  // namespace braid::cuda
