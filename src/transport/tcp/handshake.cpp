#include "transport/tcp/handshake.hpp"

#include <cstring>
#include <vector>

#include "base/error.hpp"
#include "transport/tcp/crypto.hpp"

namespace braid::tcp {

namespace {

constexpr char kHelloMagic[4] = {'B', 'R', 'T', 'H'};
constexpr char kAckMagic[4] = {'B', 'R', 'T', 'K'};
constexpr std::uint16_t kVersion = 1;
constexpr std::size_t kNonceBytes = 32;
constexpr std::size_t kHelloBytes = 4 + 2 + 2 + kCommIdBytes + 4 + 4 + kNonceBytes;
static_assert(kHelloBytes == 64);
using Hello = std::array<std::byte, kHelloBytes>;
using Nonce = std::array<std::byte, kNonceBytes>;

void putU32(std::byte* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>(v >> (8 * i));
}

std::uint32_t getU32(const std::byte* at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(at[i]) << (8 * i);
  return v;
}

Hmac proof(std::span<const std::byte> secret, const char* role, const Hello& hello, const Nonce& nonceS) {
  std::vector<std::byte> message(std::strlen(role) + hello.size() + nonceS.size());
  std::memcpy(message.data(), role, std::strlen(role));
  std::memcpy(message.data() + std::strlen(role), hello.data(), hello.size());
  std::memcpy(message.data() + std::strlen(role) + hello.size(), nonceS.data(), nonceS.size());
  return hmacSha256(secret, message);
}

Nonce freshNonce() {
  Nonce n{};
  if (!randomBytes(n.data(), n.size())) fail(ErrorCode::kInternal, {}, "RAND_bytes failed (OpenSSL)");
  return n;
}

}  // namespace

void helloAsConnector(Socket& socket, const CommId& comm, std::span<const std::byte> secret, int rank, int stream,
                      Deadline deadline) {
  Hello hello{};
  std::memcpy(hello.data(), kHelloMagic, 4);
  hello[4] = static_cast<std::byte>(kVersion & 0xff);
  hello[5] = static_cast<std::byte>(kVersion >> 8);
  std::memcpy(hello.data() + 8, comm.data(), kCommIdBytes);
  putU32(hello.data() + 24, static_cast<std::uint32_t>(rank));
  putU32(hello.data() + 28, static_cast<std::uint32_t>(stream));
  const Nonce nonceC = freshNonce();
  std::memcpy(hello.data() + 32, nonceC.data(), kNonceBytes);
  socket.sendAll(hello, deadline);

  std::array<std::byte, kNonceBytes + kHmacBytes> challenge{};
  socket.recvAll(challenge, deadline);
  Nonce nonceS{};
  std::memcpy(nonceS.data(), challenge.data(), kNonceBytes);
  const Hmac expected = proof(secret, "acceptor", hello, nonceS);
  if (!equalConstantTime(expected, std::span(challenge).subspan(kNonceBytes))) {
    fail(ErrorCode::kInvalidArgument, {}, "peer at ", socket.peer(),
         " failed to prove the communicator's secret (another job on that port, or BRAID_TOKEN differs)");
  }
  socket.sendAll(proof(secret, "connector", hello, nonceS), deadline);
  std::array<std::byte, 4> ack{};
  socket.recvAll(ack, deadline);
  if (std::memcmp(ack.data(), kAckMagic, 4) != 0) {
    fail(ErrorCode::kInternal, {}, "peer at ", socket.peer(), " sent a malformed handshake acknowledgement");
  }
}

std::optional<PeerHello> helloAsAcceptor(Socket& socket, const CommId& comm, std::span<const std::byte> secret,
                                         int worldSize, int streams, Deadline deadline, std::string* why) {
  try {
    Hello hello{};
    socket.recvAll(hello, deadline);
    if (std::memcmp(hello.data(), kHelloMagic, 4) != 0) {
      *why = "not a braid mesh hello (bad magic)";
      return std::nullopt;
    }
    const unsigned version = static_cast<unsigned>(hello[4]) | (static_cast<unsigned>(hello[5]) << 8);
    if (version != kVersion) {
      *why = strCat("mesh handshake version ", version, " (this build speaks ", kVersion, ")");
      return std::nullopt;
    }
    if (std::memcmp(hello.data() + 8, comm.data(), kCommIdBytes) != 0) {
      *why = "hello for another communicator";
      return std::nullopt;
    }
    const std::uint32_t rank = getU32(hello.data() + 24);
    const std::uint32_t stream = getU32(hello.data() + 28);
    if (rank >= static_cast<std::uint32_t>(worldSize) || stream >= static_cast<std::uint32_t>(streams)) {
      *why = strCat("hello names rank ", rank, " stream ", stream, " outside ", worldSize, " ranks x ", streams,
                    " streams");
      return std::nullopt;
    }
    const Nonce nonceS = freshNonce();
    std::array<std::byte, kNonceBytes + kHmacBytes> challenge{};
    std::memcpy(challenge.data(), nonceS.data(), kNonceBytes);
    const Hmac mine = proof(secret, "acceptor", hello, nonceS);
    std::memcpy(challenge.data() + kNonceBytes, mine.data(), kHmacBytes);
    socket.sendAll(challenge, deadline);
    Hmac theirs{};
    socket.recvAll(theirs, deadline);
    if (!equalConstantTime(theirs, proof(secret, "connector", hello, nonceS))) {
      *why = strCat("rank ", rank, " (claimed) failed to prove the communicator's secret");
      return std::nullopt;
    }
    std::array<std::byte, 4> ack{};
    std::memcpy(ack.data(), kAckMagic, 4);
    socket.sendAll(ack, deadline);
    return PeerHello{static_cast<int>(rank), static_cast<int>(stream)};
  } catch (const Error& e) {
    *why = e.message();
    return std::nullopt;
  }
}

}  // namespace braid::tcp
