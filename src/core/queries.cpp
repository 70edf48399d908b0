// The free functions of the public API that answer questions about buffers and types (braid.hpp).
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "braid/braid.hpp"
#include "core/memory_kind.hpp"

namespace braid {

Memory memoryOf(const void* ptr) {
  switch (core::classifyPointer(ptr)) {
    case core::MemoryKind::kDevice:
      return Memory::kDevice;
    case core::MemoryKind::kManaged:
      return Memory::kManaged;
    case core::MemoryKind::kHost:
      break;
  }
  return Memory::kHost;
}

bool reductionSupported(DataType type, ReduceKind kind) {
  try {
    checkReduceSupported(type, ReduceOp(kind), "query");
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace braid
