// The acceptor's side of the mesh handshake, fed whatever a stranger may send to a listening port. Properties:
// it never crashes, always ends (a short deadline, the stream closed after the input), and never lets bytes that
// were not made with the secret through: no input authenticates.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>

#include "base/deadline.hpp"
#include "fuzz/fuzz_support.hpp"
#include "transport/tcp/handshake.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace braid;
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
  // The stranger's bytes, then end of stream: the acceptor must answer from what it got. A socketpair buffers
  // ~200 KiB, more than any input the fuzzer makes here (-max_len), so the write does not block.
  const auto in = fuzz::bytes(data, size);
  std::size_t sent = 0;
  while (sent < in.size()) {
    const ssize_t n = ::write(fds[1], in.data() + sent, in.size() - sent);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fds[1], SHUT_WR);
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  tcp::Socket acceptor(fds[0], "fuzzer");
  const tcp::CommId comm{};
  const std::array<std::byte, 32> secret{std::byte{7}};
  std::string why;
  std::optional<tcp::PeerHello> hello;
  fuzz::acceptsOrRejects([&] {
    hello = tcp::helloAsAcceptor(acceptor, comm, secret, /*worldSize=*/8, /*streams=*/4, Deadline::after(0.2), &why);
  });
  if (hello) fuzz::broken("bytes made without the secret passed the handshake");
  ::close(fds[1]);
  return 0;
}
