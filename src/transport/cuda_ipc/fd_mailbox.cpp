#include "transport/cuda_ipc/fd_mailbox.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/error.hpp"

namespace braid::transport {

namespace {

struct Wire {
  std::uint64_t nonce;
  std::uint64_t value;
  std::int32_t from;
  std::int32_t pad;
};

sockaddr_un addressOf(const std::string& name, socklen_t* len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Abstract namespace: a leading NUL, then the name (not NUL-terminated; the length says where it ends).
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

}  // namespace

FdMailbox::FdMailbox(std::uint64_t nonce, int rank) : nonce_(nonce), rank_(rank) {
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) fail(ErrorCode::kUnavailable, {}, "socket(AF_UNIX) for CUDA IPC: ", std::strerror(errno));
  socklen_t len = 0;
  const sockaddr_un addr = addressOf(nameOf(rank), &len);
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    fail(ErrorCode::kUnavailable, {}, "bind(@", nameOf(rank), ") for CUDA IPC: ", std::strerror(err));
  }
}

FdMailbox::~FdMailbox() {
  if (fd_ >= 0) ::close(fd_);
}

std::string FdMailbox::nameOf(int rank) const { return strCat("braid-cuda-ipc-", nonce_, "-", rank); }

void FdMailbox::send(int peer, int fd, std::uint64_t value) {
  Wire wire{nonce_, value, rank_, 0};
  iovec iov{&wire, sizeof(wire)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  socklen_t len = 0;
  sockaddr_un addr = addressOf(nameOf(peer), &len);
  msghdr msg{};
  msg.msg_name = &addr;
  msg.msg_namelen = len;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  ssize_t sent;
  do {
    sent = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent != static_cast<ssize_t>(sizeof(wire))) {
    fail(ErrorCode::kUnavailable, ErrorContext{rank_, peer, "cuda_ipc setup", -1}, "sending a CUDA IPC handle to @",
         nameOf(peer), ": ", std::strerror(errno));
  }
}

FdMailbox::Letter FdMailbox::receive(double timeoutSeconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      fail(ErrorCode::kTimeout, ErrorContext{rank_, -1, "cuda_ipc setup", -1}, "no CUDA IPC handle arrived within ",
           timeoutSeconds, " s");
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count() < 1000 ? left.count() : 1000));
    if (ready < 0 && errno != EINTR) fail(ErrorCode::kInternal, {}, "poll(CUDA IPC mailbox): ", std::strerror(errno));
    if (ready <= 0) continue;
    Wire wire{};
    iovec iov{&wire, sizeof(wire)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t got = ::recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      fail(ErrorCode::kInternal, {}, "recvmsg(CUDA IPC mailbox): ", std::strerror(errno));
    }
    int fd = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
    }
    if (got != static_cast<ssize_t>(sizeof(wire)) || wire.nonce != nonce_ || fd < 0) {
      if (fd >= 0) ::close(fd);
      fail(ErrorCode::kInternal, ErrorContext{rank_, -1, "cuda_ipc setup", -1},
           "the CUDA IPC mailbox received a message that is not from this communicator");
    }
    return Letter{fd, wire.from, wire.value};
  }
}

FdCloser::~FdCloser() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace braid::transport
