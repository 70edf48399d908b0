#include "support/free_port.hpp"

#include "transport/tcp/socket.hpp"

namespace braid::testing {

std::uint16_t freePort() {
  tcp::Socket s = tcp::listenOn({"127.0.0.1", 0}, 1);
  return s.localAddress().port;
}

}  // namespace braid::testing
