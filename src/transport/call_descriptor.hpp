// What identifies one collective call across ranks: published with every shm round and carried by every TCP
// frame, so a rank can check that its peers are in the same call before it reads their bytes.
#pragma once

#include <cstdint>

namespace braid::transport {

struct CallDescriptor {
  std::int64_t seq = 0;
  std::uint32_t collective = 0;  // braid::Collective, opaque to transports
  std::uint32_t dataType = 0;
  std::uint64_t count = 0;
  std::int32_t root = -1;
  std::uint32_t reduceKind = 0;
  std::uint64_t shapeHash = 0;  // hash of per-rank counts (v-collectives), 0 otherwise

  friend bool operator==(const CallDescriptor&, const CallDescriptor&) = default;
};

static_assert(sizeof(CallDescriptor) == 40);

}  // namespace braid::transport
