// Buffers the caller registered with the communicator (Communicator::registerBuffer, as ncclCommRegister): every
// rank's registered memory mapped into every other rank of the channel once, so that a collective on registered
// buffers reads its peers' data where it lies instead of having it pushed through the workspace's inboxes.
//
// Registration is collective (every rank, in call order), so registration i is the same on every rank and a
// kernel finds a peer's buffer from the (index, offset) the peer publishes for its call (collective_kernels.hpp).
// Memory made by cudaMalloc travels as a cudaIpc handle, cuMem memory exported as a POSIX fd; ranks of one process
// use each other's pointers. One allocation is mapped once per peer however many registrations fall in it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "algorithms/engine.hpp"
#include "cuda/kernels/collective_kernels.hpp"

namespace braid::device {

class BufferRegistry {
 public:
  BufferRegistry() = default;
  ~BufferRegistry();
  BufferRegistry(const BufferRegistry&) = delete;
  BufferRegistry& operator=(const BufferRegistry&) = delete;

  /// Collective over `host`: registers [ptr, ptr + bytes) of this rank (GPU memory of `device`) and maps every
  /// peer's. Returns the registration's index, the same on every rank. Throws on every rank alike when any rank
  /// cannot share its buffer or map a peer's (the message names the rank and why).
  std::uint32_t add(Engine& host, int rank, int size, int device, void* ptr, std::size_t bytes, const OpEnv& env);
  /// Collective: forgets registration `index` on every rank. The caller has waited for every kernel that may read
  /// it (its own; its peers' end before its own do).
  void remove(Engine& host, int size, std::uint32_t index, const OpEnv& env);

  /// Where [ptr, ptr + bytes) lies in this rank's registrations: (index + 1, offset), or (0, 0) when it is not
  /// inside one.
  std::pair<std::uint32_t, std::uint64_t> find(const void* ptr, std::size_t bytes) const;
  bool empty() const { return own_.empty(); }
  /// The kernels' table (device memory, kMaxRegistrations entries); null before the first registration.
  const cuda::kernels::RegisteredBuffer* table() const { return table_; }

 private:
  struct PeerMemory;  // one peer allocation mapped here
  struct Own {
    std::uintptr_t begin;
    std::size_t bytes;
  };

  void writeEntry(std::uint32_t index, const cuda::kernels::RegisteredBuffer& entry);

  cuda::kernels::RegisteredBuffer* table_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::map<std::uint32_t, Own> own_;                   // by index
  std::map<std::uintptr_t, std::uint32_t> byAddress_;  // index by the registered range's start
  // Every registration's peer mappings (by index), and the mappings by (peer, the owner's allocation address).
  std::map<std::uint32_t, std::vector<std::shared_ptr<PeerMemory>>> held_;
  std::map<std::pair<int, std::uint64_t>, std::weak_ptr<PeerMemory>> mapped_;
};

}  // namespace braid::device
