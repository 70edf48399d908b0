// Where a pointer's memory lives, asked of the CUDA driver when one is present (loaded with dlopen, so libbraid
// needs no driver and no GPU). Without a driver every pointer is host memory.
#pragma once

#include <initializer_list>

#include "base/error.hpp"
#include "braid/types.hpp"

namespace braid::core {

enum class MemoryKind { kHost, kDevice, kManaged };

MemoryKind classifyPointer(const void* ptr);
/// The ordinal of the GPU whose memory `ptr` is (for managed memory: the GPU it was allocated from), asked of the
/// driver each time (not cached: freed address space may come back on another GPU); -1 when the driver cannot say.
int deviceOfPointer(const void* ptr);
const char* memoryKindName(MemoryKind kind);

/// Where one call's buffers live, which decides the engine that runs it: host memory goes to the host engine,
/// device and managed memory (which the GPU reaches alike) to the device engine. A call mixing host memory with
/// GPU memory is refused (conflict names the two buffers).
struct Route {
  bool device = false;
  const void* firstGpuPointer = nullptr;  // binds the device engine to its GPU (the first call on GPU memory)
  const char* firstName = nullptr;
  MemoryKind firstKind = MemoryKind::kHost;
  const char* conflictName = nullptr;
  MemoryKind conflictKind = MemoryKind::kHost;
};

struct NamedBuffer {
  const void* ptr;  // null: not used by this rank (a non-root's recv, a zero count)
  const char* name;
};

/// Adds one more buffer to a route being built (point-to-point groups). Inline, as routeOf: every call routes.
inline void addToRoute(Route& route, NamedBuffer buffer) {
  if (buffer.ptr == nullptr || route.conflictName != nullptr) return;
  const MemoryKind kind = classifyPointer(buffer.ptr);
  const bool gpu = kind != MemoryKind::kHost;
  if (route.firstName == nullptr) {
    route.firstName = buffer.name;
    route.firstKind = kind;
    route.device = gpu;
    if (gpu) route.firstGpuPointer = buffer.ptr;
  } else if (gpu != route.device) {
    route.conflictName = buffer.name;
    route.conflictKind = kind;
  }
}
inline Route routeOf(std::initializer_list<NamedBuffer> buffers) {
  Route route;
  for (const NamedBuffer& b : buffers) addToRoute(route, b);
  return route;
}
/// InvalidArgument naming both buffers and kinds for a mix; Unavailable for GPU memory in a build without CUDA.
void checkRoute(const Route& route, const CallContext& ctx);

}  // namespace braid::core
