// Point-to-point calls posted while a point-to-point group runs join that group, each completing on its own, as
// MPI's and Gloo's nonblocking sends and receives do. Without it, calls run in issue order: two ranks that each
// post a large send and then a receive wait for each other, each one's send waiting for a receive queued behind
// it. The engine running a group asks its feed for more operations between its waits and tells it which ones
// completed; an engine that never asks simply runs the operations it was given (then nothing joins).
//
// Collectives posted while a group runs do not wait for it (MPI's and Gloo's nonblocking point-to-point hold no
// collective back): the engine lets its feed run them between its steps (interleave), with a function that moves the
// group's messages without blocking, which the collectives' waits call, so that a peer still sending to this rank
// before it reaches the collective is not left waiting for it. Rank 0's irecv, allreduce, send and rank 1's allreduce,
// send, recv complete so.
#pragma once

#include <cstddef>
#include <vector>

#include "base/function_ref.hpp"
#include "braid/types.hpp"

namespace braid {

class P2pFeed {
 public:
  virtual ~P2pFeed() = default;
  /// Appends to `ops` the operations posted since the last call (from calls queued directly behind this group;
  /// never from behind a collective); true when it appended any. Cheap when nothing was posted.
  virtual bool take(std::vector<P2pOp>& ops) = 0;
  /// Whether take() or interleave() may find something: a cheap look for waits to end on (any thread's view, may be
  /// stale).
  virtual bool posted() const = 0;
  /// Runs the collectives queued directly behind the group, if any, on this thread, before the group's operations
  /// complete. `keepMoving` moves the group's messages without blocking (empty: the transport moves them during any
  /// wait); their waits call it between short sleeps. Throws when one of them broke the communicator. Engines call it
  /// where they call take(), outside their waits.
  virtual void interleave(FunctionRef<void()> keepMoving) { (void)keepMoving; }
  /// Operation `index` of the group's list (the first call's operations, then what take() appended) is done: its
  /// buffer is the caller's again. Each index once, here or in failed().
  virtual void completed(std::size_t index) = 0;
  /// Operation `index` is done but failed on its own (a receive of a message of another size): its call fails with
  /// `error` once the call's other operations are done; the group goes on.
  virtual void failed(std::size_t index, const Error& error) = 0;
  /// The group moved bytes (a receive placed some, a send handed some over): its peers are there. Cheap; the
  /// engine's thread.
  virtual void moved() {}
};

}  // namespace braid
