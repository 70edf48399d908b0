// Device memory made with the CUDA virtual memory API (cuMemCreate) that other processes can map: the owner
// exports a POSIX file descriptor, a peer imports it and maps the same physical memory at an address of its own.
// The physical memory lives until every process that mapped it has unmapped it, so an owner may go away while
// peers still read.
#pragma once

#include <cstddef>

namespace braid::cuda {

class VmmAllocation {
 public:
  /// At least `bytes` (rounded up to the allocation granularity) on `device`, mapped read/write for it.
  static VmmAllocation create(std::size_t bytes, int device);
  /// Maps the allocation behind `fd` (exported by its owner, `bytes` long) for `device`. Does not take `fd`.
  static VmmAllocation import(int fd, std::size_t bytes, int device);

  VmmAllocation() = default;
  VmmAllocation(VmmAllocation&& other) noexcept;
  VmmAllocation& operator=(VmmAllocation&& other) noexcept;
  VmmAllocation(const VmmAllocation&) = delete;
  VmmAllocation& operator=(const VmmAllocation&) = delete;
  ~VmmAllocation();

  void* data() const { return reinterpret_cast<void*>(address_); }
  std::size_t bytes() const { return bytes_; }
  /// A new file descriptor for the allocation (the caller closes it).
  int exportFd() const;

 private:
  void release() noexcept;

  unsigned long long handle_ = 0;   // CUmemGenericAllocationHandle
  unsigned long long address_ = 0;  // CUdeviceptr
  std::size_t bytes_ = 0;
};

}  // namespace braid::cuda
