// A call on device buffers whose host part runs on the communicator's progress thread while its caller goes on
// (CallOptions::streamAsync), as NCCL's calls do. At the call, on the caller's stream: the inputs are copied to a
// pinned host arena, an event marks them there, the stream waits for a word in host memory, and the results are
// copied back. The progress thread waits for the event, runs the call on the host copies, and writes the word.
//
// Every GPU operation is queued on the caller's stream at the call; the progress thread queues none and only
// writes host memory. A stream held in a wait-value operation blocks the hardware queue it is mapped to, which
// other streams may share (CUDA_DEVICE_MAX_CONNECTIONS=1 makes them all share one): work another thread queued
// later on another stream to release it could sit behind that wait forever.
//
// No CUDA types here: core/ holds the handoff whether or not braid was built with CUDA.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "algorithms/op_env.hpp"
#include "algorithms/staging_layout.hpp"
#include "base/error.hpp"

struct CUstream_st;

namespace braid::device {

class StreamHandoff {
 public:
  /// One call handed off: its number (calls are released in this order) and where each of its extents' host copy
  /// lies (null for a null extent).
  struct Ticket {
    std::uint64_t number = 0;
    std::vector<void*> copies;
    int event = -1;  // the event that marks its inputs copied
    /// A failure after the wait was queued: the ticket stands (it is released in its turn) and the call fails
    /// with this when it runs.
    std::optional<Error> failure;
  };

  virtual ~StreamHandoff() = default;

  /// On the issuing thread: queues the copies in, the wait for this call's release, and the copies out on
  /// `stream`. Tickets must be released in the order they are issued. Throws (having queued no wait) when the
  /// stream is being captured into a CUDA graph or CUDA refuses a copy.
  virtual Ticket issue(std::span<const DeviceExtent> extents, CUstream_st* stream, const CallContext& ctx) = 0;
  /// On the progress thread: returns once the ticket's inputs are in host memory (ends with env's abort, lost
  /// peers and timeout, as every wait of a call does).
  virtual void awaitInputs(const Ticket& ticket, const OpEnv& env) = 0;
  /// Ticket `number`'s host part is over, failed or not: its stream copies the results back and goes on.
  virtual void release(std::uint64_t number) noexcept = 0;
  /// From any thread (abort): lets every stream waiting on a ticket go on.
  virtual void releaseAll() noexcept = 0;
};

/// The handoff of a communicator whose device buffers are on GPU `device`; null where braid was built without CUDA
/// or the driver cannot queue 64-bit waits (calls then hold their caller, as without CallOptions::streamAsync).
std::unique_ptr<StreamHandoff> makeStreamHandoff(int device, int rank);

}  // namespace braid::device
