// The few OpenSSL calls braid makes (HMAC-SHA256, random bytes, constant-time compare), serialised with fork().
#pragma once

#include <array>
#include <cstddef>
#include <mutex>
#include <span>

namespace braid::tcp {

inline constexpr std::size_t kHmacBytes = 32;  // SHA-256
using Hmac = std::array<std::byte, kHmacBytes>;

/// A process that forks its ranks after starting a store or a mesh (the usual "make a unique id, then fork"
/// pattern) must not fork while a braid thread is inside OpenSSL, whose locks the child would inherit held.
/// Every OpenSSL call below holds this guard; pthread_atfork takes it around fork().
std::unique_lock<std::mutex> cryptoForkGuard();
/// RAND_bytes under the guard; false when OpenSSL fails.
bool randomBytes(void* out, std::size_t bytes);
/// HMAC-SHA256(key, message). An empty key is valid. Throws Internal when OpenSSL fails.
Hmac hmacSha256(std::span<const std::byte> key, std::span<const std::byte> message);
/// Compares without an early exit, so the time taken tells an attacker nothing about where a guess went wrong.
bool equalConstantTime(std::span<const std::byte> a, std::span<const std::byte> b);

}  // namespace braid::tcp
