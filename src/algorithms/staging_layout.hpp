// Host copies of one call's device buffers, for a call a host engine runs on copies (copied_call.hpp, the staging
// engine's path) or whose host part runs apart from its caller (device/stream_handoff.hpp): where each buffer's copy
// lies in one arena, which ranges are copied in before the
// host part and which are copied back after it. Pure arithmetic on addresses, so it is tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace braid {

/// A device range one call uses: what it reads (copied in), what it writes (copied back), or both.
struct DeviceExtent {
  const void* at = nullptr;  ///< null: the call passes no buffer here (a non-root's recv)
  std::size_t bytes = 0;
  bool read = false;
  bool written = false;
};

/// One copy between a device range and the arena: `bytes` at device address `device` and at arena offset `offset`.
struct ExtentCopy {
  std::uintptr_t device;
  std::size_t offset;
  std::size_t bytes;
};

struct StagingLayout {
  /// For each extent, in order, its copy's offset in the arena (kNone for a null extent).
  std::vector<std::size_t> offsets;
  std::size_t arenaBytes = 0;
  std::vector<ExtentCopy> copiesIn;   ///< before the host part: each read extent
  std::vector<ExtentCopy> copiesOut;  ///< after it: each written extent not inside another written one
  static constexpr std::size_t kNone = ~std::size_t{0};
};

/// Lays out `extents`. An extent that lies inside another shares that one's copy (in-place calls: recv == send, or
/// send inside recv), so the host call sees the aliasing the device call had; other extents get copies of their
/// own, each aligned to `alignment` bytes.
StagingLayout layOutStaging(std::span<const DeviceExtent> extents, std::size_t alignment = 64);

}  // namespace braid
