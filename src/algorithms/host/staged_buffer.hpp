// A call on buffers the host cannot read directly (GPU memory, between hosts): the algorithm works on host windows
// of them, asks for each input range before it reads it and hands over each output range as soon as it is final,
// so that the copies in and out overlap its transfers and the host memory it needs stays bounded.
// device/staging.cpp implements it with copies on the call's CUDA stream; the tests with plain memory.
#pragma once

#include <cstddef>

#include "algorithms/host/op_env.hpp"

namespace braid::host {

class StagedBuffer {
 public:
  virtual ~StagedBuffer() = default;

  /// Bytes each of the two window slots holds.
  virtual std::size_t windowBytes() const = 0;
  /// Host memory of slot 0 or 1.
  virtual std::byte* slot(int which) = 0;
  /// Starts copying bytes [offset, offset + bytes) of the call's input to `dst` (inside a slot). Copies, in and
  /// out, run in the order they are started. Returns a ticket for awaitFetched.
  virtual std::size_t fetch(std::byte* dst, std::size_t offset, std::size_t bytes) = 0;
  /// Returns once fetch `ticket` has landed; fails the call (Timeout, Aborted) like any other wait.
  virtual void awaitFetched(std::size_t ticket, const OpEnv& env) = 0;
  /// Starts copying `bytes` final bytes at `src` (inside a slot) to [offset, offset + bytes) of the call's output.
  /// A fetch started later into the same slot memory lands only after this copy has read it.
  virtual void deliver(const std::byte* src, std::size_t offset, std::size_t bytes) = 0;
};

}  // namespace braid::host
