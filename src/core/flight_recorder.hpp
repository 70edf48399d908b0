// The last calls of a communicator, for "where was every rank when it went wrong": each call's sequence
// number, what it was, when it was issued, started and ended, and how it ended. The issuing thread and the thread
// running calls write it, any thread reads it; a fixed ring of entries, so recording allocates only for an error's
// text. Dumped as JSON on demand (Communicator::flightRecord) and, with BRAID_FLIGHT_RECORDER set, into a file per
// rank when a failure leaves the ranks out of step (timeout, lost peer, mismatch, abort).
//
// Every call writes it twice, so the call path takes no shared lock: a call's id comes from an atomic counter and
// each entry has its own flag, held for a few stores (a reader dumping the ring takes each entry's in turn).
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

class FlightRecorder {
 public:
  /// Keeps the last `capacity` calls, rounded up to a power of two (a call's entry is its id masked).
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
    std::atomic_flag busy;  // held by the one thread writing or reading the fields below
    std::uint64_t id = 0;
    std::int64_t seq = -1;
    const char* op = "";
    CallInfo info;
    State state = State::kQueued;
    std::int64_t issuedNs = 0, startedNs = -1, endedNs = -1;  // since the recorder was made
    double startedEpochUs = 0;                                // the system clock's, for traces
    std::string error;
  };
  struct TraceEvent {
    const char* op;
    std::int64_t seq;
    CallInfo info;
    double startEpochUs, durationUs;
    bool failed;
  };
  /// Holds an entry's flag; the ring's entries are written by at most two threads at once (the issuing one and the
  /// one running calls), each for a few stores, so waiting is short and yields the core rather than spin.
  class Hold {
   public:
    explicit Hold(Entry& e);
    ~Hold() { e_.busy.clear(std::memory_order_release); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    Entry& e_;
  };

  std::int64_t nowNs() const;
  Entry& slot(std::uint64_t id) const { return ring_[id & (capacity_ - 1)]; }
  std::uint64_t add(const char* op, std::int64_t seq, const CallInfo& info, std::int64_t t, bool running);
  void keepTraceEvent(const Entry& e, std::int64_t endedNs, bool failed);

  const std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  const std::size_t capacity_;
  const std::unique_ptr<Entry[]> ring_;
  std::atomic<std::uint64_t> next_{0};
  std::atomic<bool> tracing_{false};
  mutable std::mutex traceMu_;  // the trace's fields below
  std::size_t maxTrace_ = 0;
  std::size_t traceDropped_ = 0;
  std::vector<TraceEvent> trace_;
};

}  // namespace braid::core
