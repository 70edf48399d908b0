// Where a pointer's memory lives, asked of the CUDA driver when one is present (loaded with dlopen, so libbraid
// needs no driver and no GPU). Without a driver every pointer is host memory.
#pragma once

namespace braid::core {

enum class MemoryKind { kHost, kDevice, kManaged };

MemoryKind classifyPointer(const void* ptr);
const char* memoryKindName(MemoryKind kind);

}  // namespace braid::core
