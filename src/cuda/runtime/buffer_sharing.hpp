// A user's device buffers lent to a peer process on the same GPU, call by call, through legacy CUDA IPC. The lender
// names the allocation that holds a pointer (its process-wide buffer id and IPC handle) and puts it in one of a
// fixed number of slots, least recently used first; the borrower keeps one opened mapping per slot. Both sides see
// every slot change in the name itself (`fresh`), so they agree on what the borrower holds without asking it.
//
// Opening a handle costs ~50-60 us on an H200 (measured), a lookup nothing: a program that reuses its buffers (a
// caching allocator's segments) opens each once. A slot is only reused for another allocation once `slots` others
// were used since; the mapping it held is closed when the borrower's work queued before then is done.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/runtime/ipc_allocation.hpp"

namespace braid::cuda {

/// How a lender names a buffer to its borrower. Plain data: it travels between processes.
struct LentBuffer {
  std::uint64_t id;      ///< CU_POINTER_ATTRIBUTE_BUFFER_ID of the allocation (never reused by its process)
  std::uint64_t offset;  ///< of the pointer from the allocation's start
  IpcHandle handle;      ///< the allocation's cudaIpcMemHandle_t (meaningful when fresh)
  std::uint32_t slot;
  std::uint32_t fresh;  ///< 1: the borrower opens `handle` into `slot`, closing what it held there
};

class BufferLender {
 public:
  explicit BufferLender(std::size_t slots);

  /// Names the allocation holding [p, p + bytes) in `out`. False, naming nothing, where legacy CUDA IPC cannot
  /// share it: not device memory of this process (host, managed), stream-ordered pools (cudaMallocAsync), cuMem
  /// memory made without a legacy IPC handle (PyTorch's expandable segments), or a range past its allocation.
  bool lend(const void* p, std::size_t bytes, LentBuffer* out);
  /// The borrower could not open `slot`: its allocation is named fresh again next time.
  void forget(std::uint32_t slot);

 private:
  struct Slot {
    std::uint64_t id = 0;  // 0: empty (buffer ids start at 1)
    std::uint64_t used = 0;
    IpcHandle handle{};
  };
  std::vector<Slot> slots_;
  std::uint64_t clock_ = 0;
};

class BufferBorrower {
 public:
  explicit BufferBorrower(std::size_t slots);
  ~BufferBorrower();
  BufferBorrower(const BufferBorrower&) = delete;
  BufferBorrower& operator=(const BufferBorrower&) = delete;

  /// Opens `b` when it is fresh (the slot's previous mapping is closed once the work already queued on `stream`
  /// is done). Throws braid::Error when the driver refuses the handle; the slot is then empty.
  void take(const LentBuffer& b, cudaStream_t stream);
  /// The lent pointer in this process (after take).
  std::byte* at(const LentBuffer& b) const;

 private:
  struct Retired {
    IpcMapping mapping;
    std::uint64_t id = 0;
    cudaEvent_t after = nullptr;
  };
  /// Closes the retired mappings whose queued work is done.
  void reap();
  /// Moves `slot`'s mapping to the retired ones, to close after the work queued on `stream` so far.
  void retire(std::size_t slot, cudaStream_t stream);

  std::vector<IpcMapping> slots_;
  std::vector<std::uint64_t> ids_;  // the buffer id each slot holds
  std::vector<Retired> retired_;
};

}  // namespace braid::cuda
