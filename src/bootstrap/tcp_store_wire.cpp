// The TCP store's wire format: frame header encoding/decoding and the handshake's HMAC proof (the protocol is
// described in tcp_store.hpp). Separate from the server and the client because both speak it and neither owns it.
#include <cstring>
#include <mutex>
#include <vector>

#include "base/error.hpp"
#include "bootstrap/tcp_store.hpp"
#include "transport/tcp/crypto.hpp"

namespace braid::bootstrap {

namespace wire {

namespace {

constexpr char kMagic[4] = {'B', 'R', 'S', 'T'};
constexpr char kAuthContext[] = "braid-store-v1";

void putU32(std::byte* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>(v >> (8 * i));
}

std::uint32_t getU32(const std::byte* at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(at[i]) << (8 * i);
  return v;
}

}  // namespace

std::array<std::byte, kHeaderBytes> encodeHeader(const Header& header) {
  std::array<std::byte, kHeaderBytes> out{};
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::byte>(kMagic[i]);
  out[4] = static_cast<std::byte>(kVersion);
  out[5] = static_cast<std::byte>(header.op);
  out[6] = static_cast<std::byte>(header.status);
  out[7] = std::byte{0};
  putU32(&out[8], header.keyBytes);
  putU32(&out[12], header.valueBytes);
  return out;
}

bool decodeHeader(std::span<const std::byte, kHeaderBytes> bytes, Header* header, std::string* why) {
  if (std::memcmp(bytes.data(), kMagic, 4) != 0) {
    *why = "bad magic (not a braid store frame)";
    return false;
  }
  if (static_cast<std::uint8_t>(bytes[4]) != kVersion) {
    *why = strCat("protocol version ", static_cast<int>(bytes[4]), " (this build speaks ", int{kVersion}, ")");
    return false;
  }
  header->op = static_cast<Op>(bytes[5]);
  header->status = static_cast<Status>(bytes[6]);
  header->keyBytes = getU32(&bytes[8]);
  header->valueBytes = getU32(&bytes[12]);
  return true;
}

std::unique_lock<std::mutex> cryptoForkGuard() { return tcp::cryptoForkGuard(); }

bool randomBytes(void* out, std::size_t bytes) { return tcp::randomBytes(out, bytes); }

std::array<std::byte, kProofBytes> authProof(const std::string& token, std::span<const std::byte> nonce) {
  std::vector<std::byte> message(nonce.size() + sizeof kAuthContext - 1);
  std::memcpy(message.data(), nonce.data(), nonce.size());
  std::memcpy(message.data() + nonce.size(), kAuthContext, sizeof kAuthContext - 1);
  return tcp::hmacSha256(std::as_bytes(std::span(token.data(), token.size())), message);
}

}  // namespace wire

}  // namespace braid::bootstrap
