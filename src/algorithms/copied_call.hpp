// A call on buffers its host engine cannot reach in place (GPU memory), run by that engine on host copies of them:
// the ranges the call reads are copied into one arena (deviceExtentsOf, then layOutStaging, so that an in-place call
// stays in place there), the engine runs the same call on the arena, and the ranges it writes are copied back. The
// copies themselves are the caller's (device/staging.cpp: on the call's CUDA stream; the tests: memcpy).
#pragma once

#include <cstddef>

#include "algorithms/engine.hpp"

namespace braid {

class BufferCopies {
 public:
  virtual ~BufferCopies() = default;

  /// Host memory of at least `bytes`, for one call at a time.
  virtual std::byte* arena(std::size_t bytes) = 0;
  /// Starts copying `bytes` of the call's buffer at `from` to host memory `to`.
  virtual void fetch(std::byte* to, const void* from, std::size_t bytes) = 0;
  /// Returns once every fetch has landed and the work the call follows is done (also when nothing was fetched: a
  /// barrier follows its stream's work too).
  virtual void awaitFetched(const OpEnv& env) = 0;
  /// Starts copying `bytes` of host memory `from` to the call's buffer at `to`.
  virtual void deliver(void* to, const std::byte* from, std::size_t bytes) = 0;
  /// Returns once every delivery has landed.
  virtual void awaitDelivered(const OpEnv& env) = 0;
};

/// Runs `call` (any but a rejected one), as rank env.context.rank of `size`, on `host` over copies made by `copies`.
/// Point-to-point operations that join a running group do not join this one: its copies back follow the whole group.
void runOnCopies(Collectives& host, const CallArgs& call, int size, BufferCopies& copies, const OpEnv& env);

}  // namespace braid
