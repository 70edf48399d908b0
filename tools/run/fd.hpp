// An owned file descriptor, closed when it goes out of scope. A header of its own because both halves of the
// launcher hold fds: launcher.cpp its pipes, rank_setup.cpp the sockets that reserve free ports.
#pragma once

#include <unistd.h>

#include <utility>

namespace braid::tools {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace braid::tools
