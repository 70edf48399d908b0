// LocalGroup for ranks that are threads of one process: the regions are heap memory shared by reference.
// Tests use it to run many ranks fast and to exercise the algorithms without /dev/shm.
#pragma once

#include <memory>
#include <vector>

#include "transport/local_group.hpp"

namespace braid::transport {

/// The memory behind a thread group: `size` zeroed regions of `regionBytes`, shared by every rank's view.
class MemoryArena {
 public:
  MemoryArena(int size, std::size_t regionBytes);
  ~MemoryArena();
  MemoryArena(const MemoryArena&) = delete;
  MemoryArena& operator=(const MemoryArena&) = delete;

  int size() const { return static_cast<int>(regions_.size()); }
  std::size_t regionBytes() const { return regionBytes_; }
  std::byte* region(int rank) const { return regions_[rank]; }

 private:
  std::size_t regionBytes_;
  std::vector<std::byte*> regions_;
};

class MemoryLocalGroup final : public LocalGroup {
 public:
  MemoryLocalGroup(std::shared_ptr<MemoryArena> arena, int rank) : arena_(std::move(arena)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return arena_->size(); }
  std::size_t regionBytes() const override { return arena_->regionBytes(); }
  std::byte* region(int peer) override { return arena_->region(peer); }
  bool peerAlive(int) override { return true; }
  const char* kind() const override { return "memory"; }

 private:
  std::shared_ptr<MemoryArena> arena_;
  int rank_;
};

}  // namespace braid::transport
