#include "transport/tcp/crypto.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pthread.h>

#include "base/error.hpp"

namespace braid::tcp {

namespace {

std::mutex gCryptoMutex;

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

Hmac hmacSha256(std::span<const std::byte> key, std::span<const std::byte> message) {
  static const unsigned char kNoKey = 0;  // OpenSSL wants a non-null key pointer even for an empty key
  const void* keyData = key.empty() ? static_cast<const void*>(&kNoKey) : key.data();
  Hmac out{};
  unsigned int length = 0;
  const auto guard = cryptoForkGuard();
  if (HMAC(EVP_sha256(), keyData, static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
           message.size(), reinterpret_cast<unsigned char*>(out.data()), &length) == nullptr ||
      length != kHmacBytes) {
    fail(ErrorCode::kInternal, {}, "HMAC-SHA256 failed (OpenSSL)");
  }
  return out;
}

bool equalConstantTime(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace braid::tcp
