// A POSIX shared-memory segment: created by its owner, mapped by its peers, unlinked as soon as every peer has
// mapped it so that a killed job leaves nothing behind in /dev/shm.
#pragma once

#include <cstddef>
#include <string>

namespace braid::transport {

class ShmSegment {
 public:
  /// Creates and maps `name` (e.g. "/braid-<token>-3") of `bytes`, with every page allocated and touched now, so
  /// no collective pays a first-touch fault later. Unavailable when /dev/shm cannot hold it.
  static ShmSegment create(const std::string& name, std::size_t bytes);
  /// Maps a segment a peer created.
  static ShmSegment open(const std::string& name, std::size_t bytes);

  ShmSegment() = default;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  /// Removes the name (the mapping stays valid). Idempotent; the owner calls it once every peer mapped it.
  void unlink();

  std::byte* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }

 private:
  void release() noexcept;

  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::string name_;
  bool owner_ = false;
  bool linked_ = false;
};

}  // namespace braid::transport
