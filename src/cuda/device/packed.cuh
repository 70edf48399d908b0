// 16-byte packed global loads and stores: one ld.global.v4 / st.global.v4 moves 16 bytes per thread, the width at
// which a warp's accesses coalesce into full 512-byte transactions (and what NVLink peer loads want too).
// Device code only: this header includes nothing from braid's host side.
#pragma once

#include <vector_types.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace braid::cuda::device {

/// Bytes one packed access moves.
inline constexpr int kPackBytes = 16;

static_assert(sizeof(uint4) == kPackBytes && alignof(uint4) == kPackBytes, "uint4 is the 16-byte pack");
static_assert(sizeof(int4) == kPackBytes && alignof(int4) == kPackBytes, "int4 is the 16-byte pack");

/// A 16-byte pack seen as lanes of an unsigned integer type of 1, 2, 4 or 8 bytes (an element's bit pattern).
/// Lanes are read and written through the union: nvcc keeps the whole pack in four registers and turns lane
/// accesses into register moves and bit-field extracts.
template <typename Bits>
struct Pack {
  static_assert(std::is_unsigned_v<Bits> &&
                    (sizeof(Bits) == 1 || sizeof(Bits) == 2 || sizeof(Bits) == 4 || sizeof(Bits) == 8),
                "lanes are 1-, 2-, 4- or 8-byte unsigned bit patterns");
  static constexpr int kLanes = kPackBytes / static_cast<int>(sizeof(Bits));
  static_assert(kLanes * sizeof(Bits) == kPackBytes, "lanes fill the pack exactly");

  union {
    uint4 raw;
    Bits lane[kLanes];
  };
};

static_assert(sizeof(Pack<std::uint8_t>) == kPackBytes && alignof(Pack<std::uint8_t>) == kPackBytes);
static_assert(sizeof(Pack<std::uint16_t>) == kPackBytes && alignof(Pack<std::uint16_t>) == kPackBytes);
static_assert(sizeof(Pack<std::uint32_t>) == kPackBytes && alignof(Pack<std::uint32_t>) == kPackBytes);
static_assert(sizeof(Pack<std::uint64_t>) == kPackBytes && alignof(Pack<std::uint64_t>) == kPackBytes);

/// Whether p may be used for a packed access.
__device__ __forceinline__ bool isPackAligned(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) % kPackBytes) == 0;
}

/// 16 bytes from p, which must be 16-byte aligned (the launcher guarantees it; a misaligned packed access is a
/// device fault, not a slow path). A plain (coherent) load rather than ld.global.nc: sources may be peers'
/// buffers written while this grid runs, which the read-only cache path does not promise to observe.
template <typename Bits>
__device__ __forceinline__ Pack<Bits> loadPack(const Bits* p) {
  Pack<Bits> pack;
  pack.raw = *reinterpret_cast<const uint4*>(p);
  return pack;
}

/// Writes 16 bytes to p, which must be 16-byte aligned.
template <typename Bits>
__device__ __forceinline__ void storePack(Bits* p, const Pack<Bits>& pack) {
  *reinterpret_cast<uint4*>(p) = pack.raw;
}

}  // namespace braid::cuda::device
