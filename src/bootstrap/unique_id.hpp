// The unique id: what the root creates and the caller hands to every rank (as ncclUniqueId) so that they can
// find and authenticate to the root's store.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "transport/tcp/socket.hpp"

namespace braid::bootstrap {

// 128 opaque bytes the caller distributes to every rank (like ncclUniqueId): magic, version, root address, token.
// Layout: "BRID" | version u8 | host length u8 | port u16 (big-endian) | token length u8 | host | token | zeros.
struct UniqueIdBytes {
  std::array<std::uint8_t, 128> bytes;
};

// Generates a random token, starts a TcpStoreServer on hostAddressForPeers():0 owned by a process-wide registry
// (kept alive until releaseRootServer(id) or process exit), and encodes address + token.
UniqueIdBytes createUniqueId();

struct DecodedId {
  tcp::Address root;
  std::string token;
};

// Encodes without starting anything (createUniqueId uses it; tests and external stores may too).
// InvalidArgument when host and token do not fit in the 128 bytes.
UniqueIdBytes encodeUniqueId(const tcp::Address& root, const std::string& token);
DecodedId decodeUniqueId(const UniqueIdBytes& id);  // validates magic/version/lengths: InvalidArgument if garbage
void releaseRootServer(const UniqueIdBytes& id);    // stops the server this process started for the id, if any
std::string randomToken();                          // 32 hex chars from RAND_bytes

}  // namespace braid::bootstrap
