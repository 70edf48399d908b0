// TCP sockets for bootstrap and the tcp transport. Every fd is non-blocking and every blocking call waits in
// poll() against a Deadline, so nothing here can hang past the caller's timeout.
//
// Error mapping: the peer closing or resetting -> PeerLost; a deadline passing -> Timeout; an address that
// cannot be parsed or resolved -> InvalidArgument naming the text; any other errno -> Internal naming the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/deadline.hpp"

namespace braid::tcp {

/// A host and a port. `host` is a name or a numeric address, IPv6 literals without their brackets.
struct Address {
  std::string host;
  std::uint16_t port = 0;

  /// Parses "HOST:PORT" or "[V6]:PORT" (port 0..65535). Does not resolve the host; InvalidArgument naming the
  /// text when malformed. Unbracketed IPv6 ("::1:80") is refused: its port cannot be told apart.
  static Address parse(std::string_view text);
  /// "host:port", or "[host]:port" when host contains ':'.
  std::string toString() const;

  bool operator==(const Address&) const = default;
};

/// Owns one socket fd (closed on destruction). Move-only. Not thread-safe: one thread uses a Socket at a time.
class Socket {
 public:
  Socket() = default;
  /// Takes ownership of `fd`, which must already be non-blocking. `peer` names the other end in errors.
  explicit Socket(int fd, std::string peer = {});
  ~Socket();
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  /// Gives the fd up (the caller now closes it); this Socket is left invalid.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  /// "HOST:PORT" of the other end as known at connect/accept time ("" for a listening socket).
  const std::string& peer() const { return peer_; }
  void close();

  /// The bound address with the real port (after listenOn with port 0) as a numeric host.
  Address localAddress() const;

  /// On a listening socket: the next connection, with TCP_NODELAY set. Timeout when none arrives in time.
  Socket accept(Deadline deadline);
  /// On a listening socket: a pending connection, or an invalid Socket when none is waiting. For event loops.
  /// Throws Internal on errors that retrying will not fix (EMFILE, ENFILE, ENOBUFS, ...).
  Socket tryAccept();

  /// Sends or receives exactly data.size() bytes. If the deadline passes first, Timeout (the stream is then
  /// out of step: the caller should drop the connection). The peer closing or resetting -> PeerLost.
  void sendAll(std::span<const std::byte> data, Deadline deadline);
  void recvAll(std::span<std::byte> data, Deadline deadline);

  /// One non-blocking attempt each, for event loops: the number of bytes moved, 0 when the call would block.
  /// recvSome throws PeerLost when the peer has closed (end of stream) or reset the connection.
  std::size_t sendSome(std::span<const std::byte> data);
  std::size_t recvSome(std::span<std::byte> data);

 private:
  int fd_ = -1;
  std::string peer_;
};

/// A listening socket bound to `address` (port 0 = an ephemeral port; read it back with localAddress()).
/// SO_REUSEADDR is set so a restarted root can take its port back while old connections sit in TIME_WAIT.
Socket listenOn(const Address& address, int backlog);

/// Connects to `address`, retrying refused/unreachable/timed-out attempts with backoff until the deadline:
/// ranks commonly start before the root listens. Timeout names the address and the last error seen.
Socket connectTo(const Address& address, Deadline deadline);

/// The address of this host to advertise to peers: the best one BRAID_IFNAME selects (tcp/interfaces.hpp; by
/// default a non-loopback IPv4 address, container bridges such as docker0 and then loopback only when nothing else
/// is up). InvalidArgument naming BRAID_IFNAME and the interfaces present when it selects none.
std::string hostAddressForPeers();
/// The same for a given BRAID_IFNAME value (NCCL_SOCKET_IFNAME syntax: "eth", "^docker,lo", "=eth0").
std::string hostAddressForPeers(std::string_view ifnameSpec);

}  // namespace braid::tcp
