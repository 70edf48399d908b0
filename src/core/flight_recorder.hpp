// The last calls of a communicator, for "where was every rank when it went wrong": each call's sequence
// number, what it was, when it was issued, started and ended, and how it ended. A fixed ring of the calls that
// started, so recording allocates only for an error's text; calls still queued are the queue's to tell, and join the
// dump after them. Dumped as JSON on demand (Communicator::flightRecord) and, with BRAID_FLIGHT_RECORDER set, into a
// file per rank when a failure leaves the ranks out of step (timeout, lost peer, mismatch, abort).
//
// Only the thread running calls writes the ring (calls run one at a time, point-to-point groups on that one thread),
// so a call costs it plain stores: each entry is a sequence lock, odd while written, that a reader on any thread
// reads around and retries.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
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

/// A call not yet started, as the queue holds it.
struct QueuedCall {
  const char* op;
  std::int64_t seq;
  CallInfo info;
  std::int64_t issuedNs;
};

class FlightRecorder {
 public:
  /// Keeps the last `capacity` calls that started, rounded up to a power of two (a call's entry is its id masked).
  explicit FlightRecorder(std::size_t capacity = 256);

  /// The recorder's clock, for the issue time of a call that is queued first.
  std::int64_t now() const;
  /// A call starts (seq -1: not a collective), issued at `issuedNs` (-1: now); returns its id, the running count of
  /// calls started. The thread running calls only, as for ended().
  std::uint64_t began(const char* op, std::int64_t seq, const CallInfo& info, std::int64_t issuedNs = -1);
  /// The call ended: done when `error` is null, else failed with its text.
  void ended(std::uint64_t id, const Error* error);

  /// {"rank": R, "size": N, "peers": [...], "calls": [...]}: where each peer was as this rank last learned it
  /// (`peers`, from the engine), then this rank's calls, oldest first: those that started, then `queued`; times in
  /// microseconds since the recorder was made. Any thread.
  std::string json(int rank, int size, const std::vector<transport::PeerProgress>& peers = {},
                   const std::vector<QueuedCall>& queued = {}) const;

  /// BRAID_TRACE: from now on keep every call that ends (up to `maxEvents`, then count the rest) for chromeTrace().
  void startTrace(std::size_t maxEvents);
  /// The calls kept, as a Chrome / Perfetto trace ({"traceEvents": [...]}): one complete event per call on the
  /// process of id `rank`, timed by the system clock (so ranks of one host line up).
  std::string chromeTrace(int rank) const;

 private:
  enum class State : std::uint8_t { kQueued, kRunning, kDone, kFailed };
  std::int64_t clock() const;  // now(), inlined where every call reads it
  /// One call as a reader sees it.
  struct Call {
    std::uint64_t id = 0;
    std::int64_t seq = -1;
    const char* op = "";
    CallInfo info;
    State state = State::kQueued;
    std::int64_t issuedNs = 0, startedNs = -1, endedNs = -1;  // since the recorder was made
    std::string error;
  };
  /// A call's fields as the ring keeps them: atomics, so that a reader racing the writer reads torn values at
  /// worst, which `version` tells it to throw away.
  struct Entry {
    std::atomic<std::uint64_t> version{0};  // odd while the writer is in it
    std::atomic<std::uint64_t> id{0};
    std::atomic<std::int64_t> seq{-1};
    std::atomic<const char*> op{""};
    std::atomic<std::size_t> count{0};
    std::atomic<DataType> type{DataType::kUint8};
    std::atomic<ReduceKind> reduce{ReduceKind::kSum};
    std::atomic<int> root{-1};
    std::atomic<State> state{State::kQueued};
    std::atomic<std::int64_t> issuedNs{0}, startedNs{-1}, endedNs{-1};
    std::atomic<double> startedEpochUs{0};  // the system clock's, for traces
    std::atomic<bool> failed{false};        // the error's text is in errors_, at the entry's index
  };
  /// The writer's side of an entry's sequence lock: odd on the way in, even on the way out.
  class Writing {
   public:
    explicit Writing(Entry& e);
    ~Writing();
    Writing(const Writing&) = delete;
    Writing& operator=(const Writing&) = delete;

   private:
    Entry& e_;
    std::uint64_t version_;
  };
  struct TraceEvent {
    const char* op;
    std::int64_t seq;
    CallInfo info;
    double startEpochUs, durationUs;
    bool failed;
  };

  std::size_t index(std::uint64_t id) const { return id & (capacity_ - 1); }
  /// A consistent copy of `id`'s entry, or nothing when the ring wrote over it (or, after many tries, while its
  /// writer is stopped in it).
  bool read(std::uint64_t id, Call& out) const;
  void keepTraceEvent(const Entry& e, std::int64_t endedNs, bool failed);
  static void appendCall(std::string& out, const Call& c, bool comma);

  const std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  const std::size_t capacity_;
  const std::unique_ptr<Entry[]> ring_;
  std::atomic<std::uint64_t> last_{0};  // the id of the last call that started
  mutable std::mutex errorMu_;          // errors_
  std::vector<std::string> errors_;     // a failed entry's text, by index
  std::atomic<bool> tracing_{false};
  mutable std::mutex traceMu_;  // the trace's fields below
  std::size_t maxTrace_ = 0;
  std::size_t traceDropped_ = 0;
  std::vector<TraceEvent> trace_;
};

}  // namespace braid::core
