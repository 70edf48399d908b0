// The last calls of a communicator, for "where was every rank when it went wrong": each call's sequence
// number, what it was, when it was issued, started and ended, and how it ended. The issuing thread and the thread
// running calls write it, any thread reads it; a fixed ring of entries, so recording allocates only for an error's
// text. Dumped as JSON on demand (Communicator::flightRecord) and, with BRAID_FLIGHT_RECORDER set, into a file per
// rank when a failure leaves the ranks out of step (timeout, lost peer, mismatch, abort).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "braid/types.hpp"
#include "transport/progress.hpp"

namespace braid::core {

/// What a collective call moves (count 0: not told, e.g. barrier and point-to-point groups).
struct CallInfo {
  DataType type = DataType::kUint8;
  std::size_t count = 0;
  ReduceKind reduce = ReduceKind::kSum;
  int root = -1;
};

class FlightRecorder {
 public:
  explicit FlightRecorder(std::size_t capacity = 256);

  /// A call was issued (seq -1: not a collective); returns its id, the running count of calls.
  std::uint64_t issued(const char* op, std::int64_t seq, const CallInfo& info);
  void started(std::uint64_t id);
  /// A call issued and started at once (one that runs on the issuing thread): issued() then started() for one
  /// lock and one clock read.
  std::uint64_t began(const char* op, std::int64_t seq, const CallInfo& info);
  /// The call ended: done when `error` is null, else failed with its text.
  void ended(std::uint64_t id, const Error* error);

  /// {"rank": R, "size": N, "peers": [...], "calls": [...]}: where each peer was as this rank last learned it
  /// (`peers`, from the engine), then this rank's calls, oldest first; times in microseconds since the recorder was
  /// made.
  std::string json(int rank, int size, const std::vector<transport::PeerProgress>& peers = {}) const;

  /// BRAID_TRACE: from now on keep every call that ends (up to `maxEvents`, then count the rest) for chromeTrace().
  void startTrace(std::size_t maxEvents);
  /// The calls kept, as a Chrome / Perfetto trace ({"traceEvents": [...]}): one complete event per call on the
  /// process of id `rank`, timed by the system clock (so ranks of one host line up).
  std::string chromeTrace(int rank) const;

 private:
  enum class State : std::uint8_t { kQueued, kRunning, kDone, kFailed };
  struct Entry {
    std::uint64_t id = 0;
    std::int64_t seq = -1;
    const char* op = "";
    CallInfo info;
    State state = State::kQueued;
    double issuedUs = 0, startedUs = -1, endedUs = -1;
    double startedEpochUs = 0;  // the system clock's, for traces
    std::string error;
  };
  struct TraceEvent {
    const char* op;
    std::int64_t seq;
    CallInfo info;
    double startEpochUs, durationUs;
    bool failed;
  };
  double nowUs() const;
  Entry& add(const char* op, std::int64_t seq, const CallInfo& info, double t);  // under mu_
  Entry* find(std::uint64_t id);                                                 // null once the ring wrote over it

  const std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;
  std::vector<Entry> ring_;
  std::uint64_t next_ = 0;
  bool tracing_ = false;
  std::size_t maxTrace_ = 0;
  std::size_t traceDropped_ = 0;
  std::vector<TraceEvent> trace_;
};

}  // namespace braid::core
