// Ranks of one host that reach each other's memory by plain loads and stores: processes through POSIX shared
// memory (shm/), threads of one process through the heap (memory/). Each rank exports one region of
// regionBytes(); every rank maps every region. What lives in a region is LocalFabric's business.
#pragma once

#include <cstddef>

namespace braid::transport {

class LocalGroup {
 public:
  virtual ~LocalGroup() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::size_t regionBytes() const = 0;
  /// This process's mapping of `peer`'s region (zero-filled at creation, 4 KiB aligned, fixed for the group's life).
  virtual std::byte* region(int peer) = 0;
  /// False once `peer` is known to be dead (its process exited). Threads are never reported dead.
  virtual bool peerAlive(int peer) = 0;
  /// "shm" or "memory", for logs and errors.
  virtual const char* kind() const = 0;
};

}  // namespace braid::transport
