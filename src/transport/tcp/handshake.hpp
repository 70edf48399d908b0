// The opening of every mesh connection, before any frame: mutual HMAC-SHA256 challenge-response over the
// communicator's secret. The connector speaks first with a fixed-size hello; the acceptor reads exactly that
// many bytes, checks them, and parses and allocates nothing else until the connector has proven the secret.
//
//   connector -> acceptor  hello     "BRTH" | version u16 | 0 u16 | comm id (16) | rank u32 | stream u32 | nonceC (32)
//   acceptor  -> connector challenge nonceS (32) | HMAC(secret, "acceptor" | hello | nonceS)
//   connector -> acceptor  proof     HMAC(secret, "connector" | hello | nonceS)
//   acceptor  -> connector ack       "BRTK"
// Both sides prove the secret, and each proof covers both nonces, so a recorded exchange cannot be replayed.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "base/deadline.hpp"
#include "transport/tcp/socket.hpp"

namespace braid::tcp {

inline constexpr std::size_t kCommIdBytes = 16;
using CommId = std::array<std::byte, kCommIdBytes>;

struct PeerHello {
  int rank = -1;
  int stream = -1;
};

/// Connector side. Throws PeerLost (the acceptor hung up: a wrong secret or comm id), Timeout, or
/// InvalidArgument when the acceptor fails to prove the secret.
void helloAsConnector(Socket& socket, const CommId& comm, std::span<const std::byte> secret, int rank, int stream,
                      Deadline deadline);
/// Acceptor side. The peer's rank and stream, or nullopt with *why set when the connection must be dropped
/// (garbage, another communicator, a rank out of [0, worldSize), a wrong proof, a timeout, a hang-up).
std::optional<PeerHello> helloAsAcceptor(Socket& socket, const CommId& comm, std::span<const std::byte> secret,
                                         int worldSize, int streams, Deadline deadline, std::string* why);

}  // namespace braid::tcp
