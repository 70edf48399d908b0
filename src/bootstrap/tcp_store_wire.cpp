// The TCP store's wire format: frame header encoding/decoding and the handshake's HMAC proof (the protocol is
// described in tcp_store.hpp). Separate from the server and the client because both speak it and neither owns it.
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pthread.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "base/error.hpp"
#include "bootstrap/tcp_store.hpp"

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

namespace {

std::mutex gCryptoMutex;

// fork() waits until no braid thread is inside OpenSSL, then both processes go on with the mutex free.
void registerForkHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    ::pthread_atfork([] { gCryptoMutex.lock(); }, [] { gCryptoMutex.unlock(); }, [] { gCryptoMutex.unlock(); });
  });
}

}  // namespace

std::unique_lock<std::mutex> cryptoForkGuard() {
  registerForkHandlers();
  return std::unique_lock<std::mutex>(gCryptoMutex);
}

bool randomBytes(void* out, std::size_t bytes) {
  const auto guard = cryptoForkGuard();
  return RAND_bytes(static_cast<unsigned char*>(out), static_cast<int>(bytes)) == 1;
}

std::array<std::byte, kProofBytes> authProof(const std::string& token, std::span<const std::byte> nonce) {
  std::vector<unsigned char> message(nonce.size() + sizeof kAuthContext - 1);
  std::memcpy(message.data(), nonce.data(), nonce.size());
  std::memcpy(message.data() + nonce.size(), kAuthContext, sizeof kAuthContext - 1);
  // OpenSSL wants a non-null key pointer even for an empty key.
  static const unsigned char kNoKey = 0;
  const void* key = token.empty() ? static_cast<const void*>(&kNoKey) : token.data();
  std::array<std::byte, kProofBytes> out{};
  unsigned int length = 0;
  const auto guard = cryptoForkGuard();
  if (HMAC(EVP_sha256(), key, static_cast<int>(token.size()), message.data(), message.size(),
           reinterpret_cast<unsigned char*>(out.data()), &length) == nullptr ||
      length != kProofBytes) {
    fail(ErrorCode::kInternal, {}, "HMAC-SHA256 failed (OpenSSL)");
  }
  return out;
}

}  // namespace wire

}  // namespace braid::bootstrap
