// The TCP store's server, fed two kinds of strangers: one that sends garbage from the first byte, and one that
// authenticates properly and then sends garbage requests (the request parser is only reachable after the proof).
// Properties: the server neither crashes nor stalls: after every input a well-behaved client still sets and gets.
#include <string>

#include "base/deadline.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/tcp_store_bytes.hpp"
#include "fuzz/fuzz_support.hpp"
#include "transport/tcp/socket.hpp"

namespace {

using namespace braid;

constexpr const char* kToken = "fuzz-token";

bootstrap::TcpStoreServer& server() {
  static bootstrap::TcpStoreServer* s = [] {
    auto* made = new bootstrap::TcpStoreServer();  // lives as long as the fuzzer process
    made->start(tcp::Address::parse("127.0.0.1:0"), kToken);
    return made;
  }();
  return *s;
}

void readReply(tcp::Socket& socket, bootstrap::wire::Header* header, std::string* value) {
  std::array<std::byte, bootstrap::wire::kHeaderBytes> raw{};
  socket.recvAll(raw, Deadline::after(2));
  std::string why;
  if (!bootstrap::wire::decodeHeader(raw, header, &why)) fuzz::broken("the store sent a header it cannot decode");
  if (header->valueBytes > 4096) fuzz::broken("the store's greeting or auth reply is too large");
  value->resize(header->valueBytes);
  socket.recvAll(std::as_writable_bytes(std::span(value->data(), value->size())), Deadline::after(2));
}

// The client's half of the store's handshake, done by hand so that the fuzzer's bytes follow it.
void authenticate(tcp::Socket& socket) {
  bootstrap::wire::Header header;
  std::string nonce;
  readReply(socket, &header, &nonce);
  const auto proof = bootstrap::wire::authProof(kToken, bootstrap::store_bytes::bytesOf(nonce));
  bootstrap::wire::Header auth;
  auth.op = bootstrap::wire::Op::kAuth;
  auth.valueBytes = static_cast<std::uint32_t>(proof.size());
  const auto head = bootstrap::wire::encodeHeader(auth);
  socket.sendAll(head, Deadline::after(2));
  socket.sendAll(proof, Deadline::after(2));
  std::string none;
  readReply(socket, &header, &none);
  if (header.status != bootstrap::wire::Status::kOk) fuzz::broken("the store refused the right token");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const tcp::Address address = server().address();
  // The first byte picks the stranger; the rest is what it sends.
  const bool afterAuth = (data[0] & 1) != 0;
  fuzz::acceptsOrRejects([&] {
    tcp::Socket socket = tcp::connectTo(address, Deadline::after(2));
    if (afterAuth) authenticate(socket);
    socket.sendAll(fuzz::bytes(data + 1, size - 1), Deadline::after(0.5));
  });
  // A well-behaved client right after: the server still answers, with what it was given.
  static int round = 0;
  const std::string key = "fuzz/health/" + std::to_string(++round);
  bool healthy = false;
  fuzz::acceptsOrRejects([&] {
    bootstrap::TcpStoreClient client(address, kToken, Deadline::after(5), /*opTimeoutSeconds=*/5);
    client.set(key, "ok");
    healthy = client.get(key, Deadline::after(5)) == "ok";
  });
  if (!healthy) fuzz::broken("the store stopped serving well-behaved clients");
  return 0;
}
