// Byte helpers that both ends of the TCP store use: the 8-byte little-endian integer arguments of get and add,
// and keys made printable for messages. Private to tcp_store_*.cpp (not part of the store's interface); a
// header of its own only because the server and the client now live in separate files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace braid::bootstrap::store_bytes {

inline std::span<const std::byte> bytesOf(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

inline std::string encodeI64(std::int64_t v) {
  std::string out(8, '\0');
  const auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>(u >> (8 * i));
  return out;
}

inline std::uint64_t decodeU64(std::string_view s) {
  std::uint64_t u = 0;
  for (int i = 0; i < 8; ++i)
    u |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[static_cast<std::size_t>(i)])) << (8 * i);
  return u;
}

inline std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 64) out += "...";
  return out;
}

}  // namespace braid::bootstrap::store_bytes
