#include "core/flight_recorder.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <ctime>
#include <thread>

namespace braid::core {

namespace {

const char* stateName(int s) {
  static const char* const kNames[] = {"queued", "running", "done", "failed"};
  return kNames[s];
}

// A JSON string literal: quotes, backslashes and control characters escaped.
void appendString(std::string& out, const std::string& text) {
  out += '"';
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += esc;
    } else {
      out += c;
    }
  }
  out += '"';
}

double epochUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

FlightRecorder::FlightRecorder(std::size_t capacity)
    : capacity_(std::bit_ceil(capacity == 0 ? std::size_t{1} : capacity)),
      ring_(std::make_unique<Entry[]>(capacity_)),
      errors_(capacity_) {}

// Inline: every call opens two entries.
inline FlightRecorder::Writing::Writing(Entry& e) : e_(e), version_(e.version.load(std::memory_order_relaxed)) {
  e_.version.store(version_ + 1, std::memory_order_relaxed);
  // The odd version is visible before any field changes (a reader that sees a new field sees the version move).
  std::atomic_thread_fence(std::memory_order_release);
}

inline FlightRecorder::Writing::~Writing() { e_.version.store(version_ + 2, std::memory_order_release); }

// Three reads a call: the precise clock costs tens of nanoseconds a read on some machines (a fifth of a small call
// over shared memory on a 2-core VM), the kernel's tick a few. A record says how long a call has been stuck, which
// the tick (1-4 ms) answers; a trace times calls, and reads the precise clock.
inline std::int64_t FlightRecorder::clock() const {
  if (!tracing_.load(std::memory_order_relaxed)) {
    timespec tick{};
    if (::clock_gettime(CLOCK_MONOTONIC_COARSE, &tick) == 0) {
      return (std::int64_t{tick.tv_sec} * 1'000'000'000 + tick.tv_nsec) -
             std::chrono::duration_cast<std::chrono::nanoseconds>(origin_.time_since_epoch()).count();
    }
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin_).count();
}

std::int64_t FlightRecorder::now() const { return clock(); }

std::uint64_t FlightRecorder::began(const char* op, std::int64_t seq, const CallInfo& info, std::int64_t issuedNs) {
  const std::int64_t t = clock();
  const double epoch = tracing_.load(std::memory_order_relaxed) ? epochUs() : 0;
  const std::uint64_t id = last_.load(std::memory_order_relaxed) + 1;
  Entry& e = ring_[index(id)];
  {
    const Writing writing(e);
    constexpr auto r = std::memory_order_relaxed;
    e.id.store(id, r);
    e.seq.store(seq, r);
    e.op.store(op, r);
    e.count.store(info.count, r);
    e.type.store(info.type, r);
    e.reduce.store(info.reduce, r);
    e.root.store(info.root, r);
    e.state.store(State::kRunning, r);
    e.issuedNs.store(issuedNs < 0 ? t : issuedNs, r);
    e.startedNs.store(t, r);
    e.endedNs.store(-1, r);
    e.startedEpochUs.store(epoch, r);
    e.failed.store(false, r);
  }
  last_.store(id, std::memory_order_release);
  return id;
}

void FlightRecorder::ended(std::uint64_t id, const Error* error) {
  const std::int64_t t = clock();
  Entry& e = ring_[index(id)];
  if (e.id.load(std::memory_order_relaxed) != id) return;  // the ring wrote over it (this thread did)
  {
    const Writing writing(e);
    e.state.store(error ? State::kFailed : State::kDone, std::memory_order_relaxed);
    e.endedNs.store(t, std::memory_order_relaxed);
    if (error) {
      std::lock_guard lock(errorMu_);
      errors_[index(id)] = error->what();
      e.failed.store(true, std::memory_order_relaxed);
    }
  }
  if (tracing_.load(std::memory_order_relaxed)) keepTraceEvent(e, t, error != nullptr);
}

bool FlightRecorder::read(std::uint64_t id, Call& out) const {
  const Entry& e = ring_[index(id)];
  constexpr auto r = std::memory_order_relaxed;
  // A writer is in an entry for a few stores; one stopped there (descheduled) is waited for a while, then skipped.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    if (attempt > 0) std::this_thread::yield();
    const std::uint64_t before = e.version.load(std::memory_order_acquire);
    if (before % 2 != 0) continue;
    out.id = e.id.load(r);
    out.seq = e.seq.load(r);
    out.op = e.op.load(r);
    out.info = CallInfo{e.type.load(r), e.count.load(r), e.reduce.load(r), e.root.load(r)};
    out.state = e.state.load(r);
    out.issuedNs = e.issuedNs.load(r);
    out.startedNs = e.startedNs.load(r);
    out.endedNs = e.endedNs.load(r);
    out.error.clear();
    if (e.failed.load(r)) {
      std::lock_guard lock(errorMu_);
      out.error = errors_[index(id)];
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.version.load(r) != before) continue;
    return out.id == id;
  }
  return false;
}

void FlightRecorder::keepTraceEvent(const Entry& e, std::int64_t endedNs, bool failed) {
  constexpr auto r = std::memory_order_relaxed;
  std::lock_guard lock(traceMu_);
  if (trace_.size() < maxTrace_) {
    trace_.push_back({e.op.load(r),
                      e.seq.load(r),
                      {e.type.load(r), e.count.load(r), e.reduce.load(r), e.root.load(r)},
                      e.startedEpochUs.load(r),
                      static_cast<double>(endedNs - e.startedNs.load(r)) / 1e3,
                      failed});
  } else {
    ++traceDropped_;
  }
}

void FlightRecorder::startTrace(std::size_t maxEvents) {
  std::lock_guard lock(traceMu_);
  maxTrace_ = maxEvents;
  trace_.reserve(std::min<std::size_t>(maxEvents, 4096));
  tracing_.store(true, std::memory_order_relaxed);
}

std::string FlightRecorder::chromeTrace(int rank) const {
  std::lock_guard lock(traceMu_);
  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [";
  char line[320];
  std::snprintf(line, sizeof line,
                "\n  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"braid rank %d\"}}",
                rank, rank);
  out += line;
  for (const TraceEvent& e : trace_) {
    std::string name = e.op;
    if (e.seq >= 0) name += " #" + std::to_string(e.seq);
    std::snprintf(
        line, sizeof line,
        ",\n  {\"name\": \"%s\", \"cat\": \"braid\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, "
        "\"tid\": 0, \"args\": {\"type\": \"%s\", \"count\": %zu, \"state\": \"%s\"}}",
        name.c_str(), e.startEpochUs, e.durationUs, rank, e.info.count > 0 ? dataTypeName(e.info.type) : "",
        e.info.count, e.failed ? "failed" : "done");
    out += line;
  }
  if (traceDropped_ > 0) {
    std::snprintf(
        line, sizeof line,
        ",\n  {\"name\": \"%zu later calls not kept\", \"ph\": \"i\", \"s\": \"p\", \"ts\": %.3f, \"pid\": %d}",
        traceDropped_, epochUs(), rank);
    out += line;
  }
  out += "\n]}\n";
  return out;
}

void FlightRecorder::appendCall(std::string& out, const Call& c, bool comma) {
  out += comma ? ",\n  {" : "\n  {";
  char head[160];
  std::snprintf(head, sizeof head, "\"id\": %llu, \"seq\": %lld, \"op\": ", static_cast<unsigned long long>(c.id),
                static_cast<long long>(c.seq));
  out += head;
  appendString(out, c.op);
  if (c.info.count > 0) {
    out += ", \"type\": ";
    appendString(out, dataTypeName(c.info.type));
    out += ", \"count\": " + std::to_string(c.info.count) + ", \"reduce\": ";
    appendString(out, reduceKindName(c.info.reduce));
    out += ", \"root\": " + std::to_string(c.info.root);
  }
  const auto us = [](std::int64_t ns) { return ns < 0 ? -1.0 : static_cast<double>(ns) / 1e3; };
  char times[160];
  std::snprintf(times, sizeof times,
                ", \"state\": \"%s\", \"issued_us\": %.1f, \"started_us\": %.1f, \"ended_us\": %.1f",
                stateName(static_cast<int>(c.state)), us(c.issuedNs), us(c.startedNs), us(c.endedNs));
  out += times;
  if (!c.error.empty()) {
    out += ", \"error\": ";
    appendString(out, c.error);
  }
  out += "}";
}

std::string FlightRecorder::json(int rank, int size, const std::vector<transport::PeerProgress>& peers,
                                 const std::vector<QueuedCall>& queued) const {
  std::string out = "{\"rank\": " + std::to_string(rank) + ", \"size\": " + std::to_string(size) + ", \"peers\": [";
  for (std::size_t i = 0; i < peers.size(); ++i) {
    const transport::PeerProgress& p = peers[i];
    // last_seq: the last collective the peer began (-1: none); age_s: how old that news is (-1: none came yet).
    char line[160];
    std::snprintf(line, sizeof line, "%s{\"rank\": %d, \"last_seq\": %lld, \"in_call\": %s, \"age_s\": %.3f}",
                  i == 0 ? "\n  " : ",\n  ", p.peer, static_cast<long long>(p.progress.seq),
                  p.progress.running ? "true" : "false", p.ageSeconds);
    out += line;
  }
  out += "], \"calls\": [";
  const std::uint64_t last = last_.load(std::memory_order_acquire);
  const std::uint64_t first = last >= capacity_ ? last - capacity_ + 1 : 1;
  bool comma = false;
  Call c;
  for (std::uint64_t id = first; id <= last; ++id) {
    if (!read(id, c)) continue;
    appendCall(out, c, comma);
    comma = true;
  }
  // Queued calls have no id yet: they take the next ones as they start, in this order.
  std::uint64_t next = last;
  for (const QueuedCall& q : queued) {
    c = Call{.id = ++next, .seq = q.seq, .op = q.op, .info = q.info, .issuedNs = q.issuedNs, .error = {}};
    appendCall(out, c, comma);
    comma = true;
  }
  out += "\n]}\n";
  return out;
}

}  // namespace braid::core
