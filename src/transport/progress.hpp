// How far a rank has got through its collectives, published where its peers can read it, so that a flight record
// written when a call hangs or fails says where every other rank was. Calls run one
// at a time in issue order, so the last collective a rank began, and whether it is still in it, says it all.
//
// They fit one 64-bit word (Progress::word), which shared memory publishes with one relaxed store per call and a
// TCP heartbeat carries in its key, so a reader never sees a sequence number from one call and a state from another.
#pragma once

#include <cstdint>

namespace braid::transport {

struct Progress {
  std::int64_t seq = -1;  // the last collective begun (-1: none yet)
  bool running = false;   // still in it
  /// Out of it, and the next collective (#seq + 1) is queued behind point-to-point calls this rank still runs,
  /// which it waits for: a peer those calls wait on, in the same state, can tell that the two cannot meet.
  bool behindPointToPoint = false;

  std::int64_t word() const { return (seq + 1) * 4 + (running ? 1 : 0) + (behindPointToPoint ? 2 : 0); }
  static Progress fromWord(std::int64_t w) { return Progress{w / 4 - 1, (w & 1) != 0, (w & 2) != 0}; }
  bool operator==(const Progress&) const = default;
};

/// What this rank knows of one peer's progress.
struct PeerProgress {
  int peer = -1;
  Progress progress;
  /// How old the knowledge is, in seconds: 0 where the peer's own word is read (shared memory); over TCP the time
  /// since its last heartbeat or the first frame of its latest call; negative when nothing has come from it yet.
  double ageSeconds = -1;
};

}  // namespace braid::transport
