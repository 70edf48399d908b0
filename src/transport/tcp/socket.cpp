#include "transport/tcp/socket.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "base/config.hpp"
#include "base/error.hpp"
#include "transport/tcp/interfaces.hpp"

namespace braid::tcp {

namespace {

std::string errnoText(int err) {
  char buf[256];
  return strerror_r(err, buf, sizeof buf);  // GNU variant: returns the message, maybe not in buf
}

// Milliseconds for poll(): rounded up so that a poll which returns 0 means the deadline really passed.
int pollTimeoutMs(const Deadline& deadline) {
  const bool cancellable = deadline.cancelFlag() != nullptr;
  if (deadline.infinite() && !cancellable) return -1;
  double ms = std::ceil(deadline.secondsLeft() * 1000.0);
  if (cancellable) ms = std::min(ms, static_cast<double>(Deadline::kCancelSliceMs));  // then look at the flag again
  return ms >= static_cast<double>(INT_MAX) ? INT_MAX : static_cast<int>(ms);
}

// Waits until fd reports one of `events` (or an error/hangup, which the caller's next I/O call turns into an
// error). False when the deadline passed first.
bool waitFor(int fd, short events, const Deadline& deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, pollTimeoutMs(deadline));
    if (rc > 0) return true;
    if (rc == 0) {
      if (deadline.expired()) return false;
      continue;
    }
    if (errno != EINTR) failErrno("poll", errno);
  }
}

void setNoDelay(int fd) {
  // Bootstrap and protocol messages are small request/reply pairs: Nagle would add up to 40 ms to each.
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) failErrno("setsockopt(TCP_NODELAY)", errno);
}

std::string formatAddress(const sockaddr* sa, socklen_t len) {
  char host[NI_MAXHOST];
  char port[NI_MAXSERV];
  const int rc = ::getnameinfo(sa, len, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
  if (rc != 0) return "?";
  Address a;
  a.host = host;
  a.port = static_cast<std::uint16_t>(std::atoi(port));
  return a.toString();
}

bool isPeerGone(int err) { return err == ECONNRESET || err == EPIPE || err == ETIMEDOUT || err == ENOTCONN; }

// Errors a connect attempt may hit while the root is not up yet, or the network is still settling.
bool isRetryableConnectError(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET || err == ECONNABORTED || err == EHOSTUNREACH ||
         err == ENETUNREACH || err == EAGAIN;
}

// Errors accept() reports for a connection that died in the backlog, or for a signal: try the next one.
bool isTransientAcceptError(int err) {
  return err == EINTR || err == ECONNABORTED || err == EPROTO || err == ENETDOWN || err == ENOPROTOOPT ||
         err == EHOSTDOWN || err == ENONET || err == EHOSTUNREACH || err == EOPNOTSUPP || err == ENETUNREACH;
}

struct AddrInfoDeleter {
  void operator()(addrinfo* p) const { ::freeaddrinfo(p); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

AddrInfoList resolve(const Address& address, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  const std::string port = std::to_string(address.port);
  addrinfo* result = nullptr;
  const int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &result);
  if (rc != 0) {
    const std::string why = rc == EAI_SYSTEM ? errnoText(errno) : ::gai_strerror(rc);
    // EAI_AGAIN: the resolver itself is unreachable right now, not a wrong name.
    fail(rc == EAI_AGAIN ? ErrorCode::kUnavailable : ErrorCode::kInvalidArgument, {}, "cannot resolve host '",
         address.host, "' of address '", address.toString(), "': ", why);
  }
  return AddrInfoList(result);
}

}  // namespace

// ---- Address ----

Address Address::parse(std::string_view text) {
  auto bad = [&](const char* why) -> Address {
    fail(ErrorCode::kInvalidArgument, {}, "malformed address '", text, "': ", why,
         " (expected HOST:PORT or [IPV6]:PORT)");
  };
  Address a;
  std::string_view portText;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return bad("missing ']'");
    a.host = std::string(text.substr(1, close - 1));
    if (close + 1 >= text.size() || text[close + 1] != ':') return bad("missing ':PORT' after ']'");
    portText = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("missing ':PORT'");
    a.host = std::string(text.substr(0, colon));
    if (a.host.find(':') != std::string::npos) return bad("IPv6 addresses need brackets");
    portText = text.substr(colon + 1);
  }
  if (a.host.empty()) return bad("empty host");
  if (portText.empty()) return bad("empty port");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), value);
  if (ec != std::errc() || end != portText.data() + portText.size() || value > 65535) return bad("bad port");
  a.port = static_cast<std::uint16_t>(value);
  return a;
}

std::string Address::toString() const {
  if (host.find(':') != std::string::npos) return strCat("[", host, "]:", port);
  return strCat(host, ":", port);
}

// ---- Socket ----

Socket::Socket(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}

Socket::~Socket() { close(); }

Socket::Socket(Socket&& other) noexcept : fd_(other.fd_), peer_(std::move(other.peer_)) { other.fd_ = -1; }

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    peer_ = std::move(other.peer_);
    other.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) {
    // Linux releases the fd even when close() reports EINTR, so it must not be retried.
    ::close(fd_);
    fd_ = -1;
  }
}

Address Socket::localAddress() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) failErrno("getsockname", errno);
  char host[NI_MAXHOST];
  char port[NI_MAXSERV];
  const int rc = ::getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, port, sizeof port,
                               NI_NUMERICHOST | NI_NUMERICSERV);
  if (rc != 0) fail(ErrorCode::kInternal, {}, "getnameinfo: ", ::gai_strerror(rc));
  Address a;
  a.host = host;
  a.port = static_cast<std::uint16_t>(std::atoi(port));
  return a;
}

Socket Socket::tryAccept() {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Socket s(fd, formatAddress(reinterpret_cast<sockaddr*>(&ss), len));
      setNoDelay(fd);
      return s;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Socket();
    if (!isTransientAcceptError(errno)) failErrno("accept", errno);
  }
}

Socket Socket::accept(Deadline deadline) {
  for (;;) {
    Socket s = tryAccept();
    if (s.valid()) return s;
    if (!waitFor(fd_, POLLIN, deadline)) {
      fail(ErrorCode::kTimeout, {}, "no connection arrived at ", localAddress().toString(), " before the deadline");
    }
  }
}

std::size_t Socket::sendSome(std::span<const std::byte> data) {
  for (;;) {
    // MSG_NOSIGNAL: a vanished peer must become PeerLost, not a SIGPIPE that kills the process.
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (isPeerGone(errno)) fail(ErrorCode::kPeerLost, {}, "connection to ", peer_, " lost: ", errnoText(errno));
    failErrno(strCat("send(", peer_, ")"), errno);
  }
}

std::size_t Socket::recvSome(std::span<std::byte> data) {
  if (data.empty()) return 0;
  for (;;) {
    const ssize_t n = ::recv(fd_, data.data(), data.size(), 0);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == 0) fail(ErrorCode::kPeerLost, {}, "peer ", peer_, " closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (isPeerGone(errno)) fail(ErrorCode::kPeerLost, {}, "connection to ", peer_, " lost: ", errnoText(errno));
    failErrno(strCat("recv(", peer_, ")"), errno);
  }
}

void Socket::sendAll(std::span<const std::byte> data, Deadline deadline) {
  std::size_t done = 0;
  while (done < data.size()) {
    const std::size_t n = sendSome(data.subspan(done));
    done += n;
    if (done == data.size()) break;
    if (n == 0 && !waitFor(fd_, POLLOUT, deadline)) {
      fail(ErrorCode::kTimeout, {}, "sending to ", peer_, " timed out (", done, " of ", data.size(), " bytes sent)");
    }
  }
}

void Socket::recvAll(std::span<std::byte> data, Deadline deadline) {
  std::size_t done = 0;
  while (done < data.size()) {
    std::size_t n = 0;
    try {
      n = recvSome(data.subspan(done));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kPeerLost) throw;
      fail(ErrorCode::kPeerLost, {}, e.message(), " (", done, " of ", data.size(), " bytes received)");
    }
    done += n;
    if (done == data.size()) break;
    if (n == 0 && !waitFor(fd_, POLLIN, deadline)) {
      fail(ErrorCode::kTimeout, {}, "receiving from ", peer_, " timed out (", done, " of ", data.size(),
           " bytes received)");
    }
  }
}

// ---- listen / connect ----

Socket listenOn(const Address& address, int backlog) {
  const AddrInfoList list = resolve(address, /*passive=*/true);
  int lastErr = 0;
  std::string lastCall;
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      lastErr = errno;
      lastCall = "socket";
      continue;
    }
    Socket s(fd);
    const int one = 1;
    if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
      failErrno("setsockopt(SO_REUSEADDR)", errno);
    }
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      lastErr = errno;
      lastCall = "bind";
      continue;
    }
    if (::listen(fd, backlog) != 0) {
      lastErr = errno;
      lastCall = "listen";
      continue;
    }
    return s;
  }
  failErrno(strCat(lastCall.empty() ? "listen" : lastCall, "(", address.toString(), ")"), lastErr);
}

Socket connectTo(const Address& address, Deadline deadline) {
  const auto start = std::chrono::steady_clock::now();
  const AddrInfoList list = resolve(address, /*passive=*/false);
  const std::string name = address.toString();
  int lastErr = 0;
  // 10 ms doubling to 1 s: quick when the root is a moment late, gentle on it when hundreds of ranks wait.
  auto backoff = std::chrono::milliseconds(10);
  for (;;) {
    for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
      const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) failErrno("socket", errno);
      Socket s(fd, name);
      int err = 0;
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        err = errno;
        if (err == EINPROGRESS || err == EINTR) {
          if (!waitFor(fd, POLLOUT, deadline)) {
            lastErr = ETIMEDOUT;
            break;
          }
          socklen_t len = sizeof err;
          if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) failErrno("getsockopt(SO_ERROR)", errno);
        }
      }
      if (err == 0) {
        setNoDelay(fd);
        return s;
      }
      if (!isRetryableConnectError(err)) failErrno(strCat("connect(", name, ")"), err);
      lastErr = err;
    }
    if (deadline.expired()) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      fail(ErrorCode::kTimeout, {}, "could not connect to ", name, " within ", waited,
           " s (last error: ", errnoText(lastErr), "); is the root process running and reachable?");
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(deadline.secondsLeft()));
    std::this_thread::sleep_for(std::min(backoff, left + std::chrono::milliseconds(1)));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

std::string hostAddressForPeers() { return hostAddressForPeers(Settings::fromEnvironment().ifname); }

std::string hostAddressForPeers(std::string_view ifnameSpec) {
  return selectInterfaces(listInterfaces(), ifnameSpec).front().hostForPeers();
}

}  // namespace braid::tcp
