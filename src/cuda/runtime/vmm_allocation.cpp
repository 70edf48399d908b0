#include "cuda/runtime/vmm_allocation.hpp"

#include <cstdint>
#include <utility>

#include "base/error.hpp"
#include "cuda/runtime/driver_api.hpp"

namespace braid::cuda {

namespace {

CUmemAllocationProp propertiesFor(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

std::size_t granularity(int device) {
  const CUmemAllocationProp prop = propertiesFor(device);
  std::size_t g = 0;
  checkDriver(driverApi().memGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
              "cuMemGetAllocationGranularity");
  return g > 0 ? g : 2u << 20;
}

// Reserves an address range, maps `handle` there and gives `device` read/write access; undoes what it did when a
// step fails (the caller still owns the handle).
CUdeviceptr mapFor(CUmemGenericAllocationHandle handle, std::size_t bytes, std::size_t align, int device) {
  const DriverApi& api = driverApi();
  CUdeviceptr address = 0;
  checkDriver(api.memAddressReserve(&address, bytes, align, 0, 0), "cuMemAddressReserve(workspace)");
  CUresult r = api.memMap(address, bytes, 0, handle, 0);
  if (r != CUDA_SUCCESS) {
    api.memAddressFree(address, bytes);
    checkDriver(r, "cuMemMap(workspace)");
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = api.memSetAccess(address, bytes, &access, 1);
  if (r != CUDA_SUCCESS) {
    api.memUnmap(address, bytes);
    api.memAddressFree(address, bytes);
    checkDriver(r, strCat("cuMemSetAccess(workspace, device ", device, ")").c_str());
  }
  return address;
}

}  // namespace

VmmAllocation VmmAllocation::create(std::size_t bytes, int device) {
  const DriverApi& api = driverApi();
  const std::size_t g = granularity(device);
  VmmAllocation a;
  a.bytes_ = (bytes + g - 1) / g * g;
  const CUmemAllocationProp prop = propertiesFor(device);
  CUmemGenericAllocationHandle handle = 0;
  checkDriver(api.memCreate(&handle, a.bytes_, &prop, 0), strCat("cuMemCreate(", a.bytes_, " bytes)").c_str());
  a.handle_ = handle;
  a.address_ = mapFor(handle, a.bytes_, g, device);
  return a;
}

VmmAllocation VmmAllocation::import(int fd, std::size_t bytes, int device) {
  const DriverApi& api = driverApi();
  CUmemGenericAllocationHandle handle = 0;
  checkDriver(api.memImportFromShareableHandle(&handle, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
              "cuMemImportFromShareableHandle(peer workspace)");
  VmmAllocation a;
  a.handle_ = handle;
  a.bytes_ = bytes;
  a.address_ = mapFor(handle, bytes, granularity(device), device);
  return a;
}

VmmAllocation::VmmAllocation(VmmAllocation&& other) noexcept
    : handle_(std::exchange(other.handle_, 0)),
      address_(std::exchange(other.address_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

VmmAllocation& VmmAllocation::operator=(VmmAllocation&& other) noexcept {
  if (this != &other) {
    release();
    handle_ = std::exchange(other.handle_, 0);
    address_ = std::exchange(other.address_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

VmmAllocation::~VmmAllocation() { release(); }

void VmmAllocation::release() noexcept {
  if (handle_ == 0) return;
  const DriverApi& api = driverApi();
  if (address_ != 0) {
    api.memUnmap(address_, bytes_);
    api.memAddressFree(address_, bytes_);
  }
  api.memRelease(handle_);
  handle_ = 0;
  address_ = 0;
}

int VmmAllocation::exportFd() const {
  int fd = -1;
  checkDriver(driverApi().memExportToShareableHandle(&fd, handle_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              "cuMemExportToShareableHandle(workspace)");
  return fd;
}

}  // namespace braid::cuda
