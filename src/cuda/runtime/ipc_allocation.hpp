// Device memory shared the older way, for where the virtual memory API cannot export POSIX file descriptors
// (drivers or containers without them): cudaMalloc memory whose cudaIpcMemHandle_t a peer process opens. Unlike
// VmmAllocation, an opened handle is only valid while the owner's allocation lives, and a process cannot open its
// own handles (ranks of one process use the owner's pointer directly).
#pragma once

#include <array>
#include <cstddef>

namespace braid::cuda {

/// The bytes of a cudaIpcMemHandle_t, as they travel between ranks.
using IpcHandle = std::array<char, 64>;

class IpcAllocation {
 public:
  /// `bytes` of cudaMalloc memory on `device` (the current device).
  static IpcAllocation create(std::size_t bytes, int device);

  IpcAllocation() = default;
  IpcAllocation(IpcAllocation&& other) noexcept;
  IpcAllocation& operator=(IpcAllocation&& other) noexcept;
  IpcAllocation(const IpcAllocation&) = delete;
  IpcAllocation& operator=(const IpcAllocation&) = delete;
  ~IpcAllocation();

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  /// The handle another process opens with IpcMapping::open.
  IpcHandle handle() const;

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// A peer process's IpcAllocation, opened in this one (closed on destruction).
class IpcMapping {
 public:
  /// Throws braid::Error naming `what` (whose allocation it is) when the driver refuses.
  static IpcMapping open(const IpcHandle& handle, const char* what = "a peer's workspace");

  IpcMapping() = default;
  IpcMapping(IpcMapping&& other) noexcept;
  IpcMapping& operator=(IpcMapping&& other) noexcept;
  IpcMapping(const IpcMapping&) = delete;
  IpcMapping& operator=(const IpcMapping&) = delete;
  ~IpcMapping();

  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
};

}  // namespace braid::cuda
