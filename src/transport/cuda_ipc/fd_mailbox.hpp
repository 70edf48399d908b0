// Passing file descriptors (CUDA allocations exported as POSIX fds) between the processes of one host: each rank
// binds an abstract Unix datagram socket named from a nonce its peers share, and peers send it descriptors with
// SCM_RIGHTS. Each message carries the nonce back, so a stray process that finds the name but not the nonce is
// refused. Abstract names need no file system and vanish with the socket.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace braid::transport {

class FdMailbox {
 public:
  /// Binds the mailbox of `rank` for the group sharing `nonce`. Throws kUnavailable when the name is taken or
  /// Unix sockets are not permitted.
  FdMailbox(std::uint64_t nonce, int rank);
  ~FdMailbox();
  FdMailbox(const FdMailbox&) = delete;
  FdMailbox& operator=(const FdMailbox&) = delete;

  /// Sends `fd` (duplicated into the receiver) to `peer`'s mailbox, tagged with this rank and `value`.
  void send(int peer, int fd, std::uint64_t value);

  struct Letter {
    int fd;  ///< owned by the caller now
    int from;
    std::uint64_t value;
  };
  /// The next descriptor sent here, waiting up to `timeoutSeconds`; kTimeout when none came, kInternal for a
  /// message without a descriptor or with another nonce (it is dropped and its descriptor closed).
  Letter receive(double timeoutSeconds);

 private:
  std::string nameOf(int rank) const;

  std::uint64_t nonce_;
  int rank_;
  int fd_ = -1;
};

/// Closes a file descriptor when it goes out of scope (-1: nothing to close).
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser();
  FdCloser(FdCloser&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  FdCloser& operator=(FdCloser&&) = delete;

 private:
  int fd_;
};

}  // namespace braid::transport
