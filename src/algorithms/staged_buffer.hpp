// A call on buffers the host cannot read directly (GPU memory, between hosts): the algorithm works on host windows
// of them, asks for each input range before it reads it and hands over each output range as soon as it is final,
// so that the copies in and out overlap its transfers and the host memory it needs stays bounded.
// device/staging.cpp implements it with copies on the call's CUDA stream; the tests with plain memory.
#pragma once

#include <cstddef>
#include <stdexcept>

#include "algorithms/op_env.hpp"
#include "braid/types.hpp"

namespace braid {

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

  /// Whether reduce() does the reductions where the buffers live (the GPU), reading the input there: then the
  /// algorithm fetches only what it sends unreduced, and receives what it reduces into receiveArea().
  virtual bool reducesWhereTheDataIs() const { return false; }
  /// Host memory of at least `bytes` that reduce() can read its `received` operand from (pinned, for a GPU).
  virtual std::byte* receiveArea(std::size_t /*bytes*/) {
    throw std::logic_error("StagedBuffer::receiveArea called where reducesWhereTheDataIs() is false");
  }
  /// Starts dst = (`count` elements of the call's input at byte `offset`) op `received`, as host::reduceSources
  /// over {input, received} with `kind` and `avgDivisor`; dst lies in a slot, received in receiveArea().
  /// Ordered with the copies; returns a ticket for awaitFetched.
  virtual std::size_t reduce(std::byte* /*dst*/, const std::byte* /*received*/, std::size_t /*offset*/,
                             std::size_t /*count*/, DataType /*type*/, ReduceKind /*kind*/, int /*avgDivisor*/) {
    throw std::logic_error("StagedBuffer::reduce called where reducesWhereTheDataIs() is false");
  }
};

}  // namespace braid
