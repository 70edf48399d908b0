#include "core/memory_kind.hpp"

#include <dlfcn.h>

#include <cstdint>

#include "base/error.hpp"

namespace braid::core {

namespace {

// The few driver API entry points needed, declared here so that no CUDA header is required.
using CuInit = int (*)(unsigned);
using CuPointerGetAttribute = int (*)(void* data, int attribute, std::uintptr_t ptr);
using CuPointerGetAttributes = int (*)(unsigned count, int* attributes, void** data, std::uintptr_t ptr);
constexpr int kAttributeMemoryType = 2;     // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kAttributeIsManaged = 8;      // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr int kAttributeDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr unsigned kMemoryTypeDevice = 2;   // CU_MEMORYTYPE_DEVICE
constexpr unsigned kMemoryTypeUnified = 4;  // CU_MEMORYTYPE_UNIFIED

struct Driver {
  CuPointerGetAttribute getAttribute = nullptr;
  // The plural form answers memory the driver does not know (plain malloc) with success and zeros, not an error:
  // classifying host buffers leaves no failed API call behind (compute-sanitizer reports those).
  CuPointerGetAttributes getAttributes = nullptr;
};

Driver loadDriver() {
  Driver d;
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return d;  // no driver: every pointer is host memory
  auto init = reinterpret_cast<CuInit>(::dlsym(lib, "cuInit"));
  auto get = reinterpret_cast<CuPointerGetAttribute>(::dlsym(lib, "cuPointerGetAttribute"));
  auto getAll = reinterpret_cast<CuPointerGetAttributes>(::dlsym(lib, "cuPointerGetAttributes"));
  // cuInit creates no context: classifying pointers costs no GPU memory.
  if (init && get && getAll && init(0) == 0) {
    d.getAttribute = get;
    d.getAttributes = getAll;
  }
  return d;
}

// A function-local static: once made, a call reads one guard byte (std::call_once costs a library call every time,
// and every call classifies its buffers).
const Driver& driver() {
  static const Driver d = loadDriver();
  return d;
}

// Asking the driver costs ~1 us a pointer, more than a small host collective. Answers are cached per 2 MiB
// granule of address space: the driver reserves its own (2 MiB-aligned) ranges for device and managed memory, so
// a granule where a host pointer lived never holds device memory, even after that buffer is freed.
constexpr unsigned kGranuleShift = 21;
constexpr std::size_t kCacheEntries = 64;

struct CacheEntry {
  std::uintptr_t granule = ~std::uintptr_t{0};
  MemoryKind kind = MemoryKind::kHost;
};

MemoryKind ask(const Driver& d, const void* ptr) {
  unsigned type = 0;  // 0 for memory the driver does not know (plain malloc): host memory
  int managed = 0;    // the driver writes a bool: into a zeroed int, either width reads right
  int attributes[2] = {kAttributeMemoryType, kAttributeIsManaged};
  void* data[2] = {&type, &managed};
  if (d.getAttributes(2, attributes, data, reinterpret_cast<std::uintptr_t>(ptr)) != 0) return MemoryKind::kHost;
  if (managed) return MemoryKind::kManaged;
  return type == kMemoryTypeDevice || type == kMemoryTypeUnified ? MemoryKind::kDevice : MemoryKind::kHost;
}

}  // namespace

MemoryKind classifyPointer(const void* ptr) {
  const Driver& d = driver();
  if (!d.getAttribute || ptr == nullptr) return MemoryKind::kHost;
  thread_local CacheEntry cache[kCacheEntries];
  const std::uintptr_t granule = reinterpret_cast<std::uintptr_t>(ptr) >> kGranuleShift;
  CacheEntry& entry = cache[granule % kCacheEntries];
  if (entry.granule == granule) return entry.kind;
  const MemoryKind kind = ask(d, ptr);
  // Every answer is cached: a granule the driver uses for GPU memory (device or managed) stays in its reserved
  // range, so it never becomes host memory; device and managed memory both go to the device path, so a granule
  // freed as one and reused as the other routes the same (only an error message would name the older kind).
  // Asking costs ~1 us per pointer: as much as a small GPU collective's whole host side.
  entry = CacheEntry{granule, kind};
  return kind;
}

int deviceOfPointer(const void* ptr) {
  const Driver& d = driver();
  int ordinal = -1;
  if (!d.getAttribute || ptr == nullptr ||
      d.getAttribute(&ordinal, kAttributeDeviceOrdinal, reinterpret_cast<std::uintptr_t>(ptr)) != 0) {
    return -1;
  }
  return ordinal;
}

void checkRoute(const Route& route, const CallContext& ctx) {
  if (route.conflictName != nullptr) {
    fail(ErrorCode::kInvalidArgument, ctx, route.firstName, " is ", memoryKindName(route.firstKind), " memory but ",
         route.conflictName, " is ", memoryKindName(route.conflictKind),
         " memory: the buffers of one call must all be host memory or all GPU memory (device or managed)");
  }
#if !BRAID_WITH_CUDA
  if (route.device) {
    fail(ErrorCode::kUnavailable, ctx, route.firstName, " is ", memoryKindName(route.firstKind),
         " memory; this braid was built without CUDA (BRAID_WITH_CUDA=OFF) and moves host buffers only");
  }
#endif
}

const char* memoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost:
      return "host";
    case MemoryKind::kDevice:
      return "device";
    case MemoryKind::kManaged:
      return "managed";
  }
  return "?";
}

}  // namespace braid::core
