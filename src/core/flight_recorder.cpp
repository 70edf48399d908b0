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
      ring_(std::make_unique<Entry[]>(capacity_)) {}

FlightRecorder::Hold::Hold(Entry& e) : e_(e) {
  while (e_.busy.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
}

// Three reads a call: the precise clock costs tens of nanoseconds a read on some machines (a fifth of a small call
// over shared memory on a 2-core VM), the kernel's tick a few. A record says how long a call has been stuck, which
// the tick (1-4 ms) answers; a trace times calls, and reads the precise clock.
std::int64_t FlightRecorder::nowNs() const {
  if (!tracing_.load(std::memory_order_relaxed)) {
    timespec tick{};
    if (::clock_gettime(CLOCK_MONOTONIC_COARSE, &tick) == 0) {
      return (std::int64_t{tick.tv_sec} * 1'000'000'000 + tick.tv_nsec) -
             std::chrono::duration_cast<std::chrono::nanoseconds>(origin_.time_since_epoch()).count();
    }
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin_).count();
}

std::uint64_t FlightRecorder::add(const char* op, std::int64_t seq, const CallInfo& info, std::int64_t t,
                                  bool running) {
  const double epoch = running && tracing_.load(std::memory_order_relaxed) ? epochUs() : 0;
  const std::uint64_t id = next_.fetch_add(1, std::memory_order_relaxed) + 1;
  Entry& e = slot(id);
  const Hold hold(e);
  e.id = id;
  e.seq = seq;
  e.op = op;
  e.info = info;
  e.state = running ? State::kRunning : State::kQueued;
  e.issuedNs = t;
  e.startedNs = running ? t : -1;
  e.endedNs = -1;
  e.startedEpochUs = epoch;
  e.error.clear();
  return id;
}

std::uint64_t FlightRecorder::issued(const char* op, std::int64_t seq, const CallInfo& info) {
  return add(op, seq, info, nowNs(), false);
}

std::uint64_t FlightRecorder::began(const char* op, std::int64_t seq, const CallInfo& info) {
  return add(op, seq, info, nowNs(), true);
}

void FlightRecorder::started(std::uint64_t id) {
  const std::int64_t t = nowNs();
  const double epoch = tracing_.load(std::memory_order_relaxed) ? epochUs() : 0;
  Entry& e = slot(id);
  const Hold hold(e);
  if (e.id != id) return;  // the ring wrote over it
  e.state = State::kRunning;
  e.startedNs = t;
  e.startedEpochUs = epoch;
}

void FlightRecorder::ended(std::uint64_t id, const Error* error) {
  const std::int64_t t = nowNs();
  Entry& e = slot(id);
  const Hold hold(e);
  if (e.id != id) return;
  e.state = error ? State::kFailed : State::kDone;
  e.endedNs = t;
  if (error) e.error = error->what();
  if (tracing_.load(std::memory_order_relaxed) && e.startedNs >= 0) keepTraceEvent(e, t, error != nullptr);
}

void FlightRecorder::keepTraceEvent(const Entry& e, std::int64_t endedNs, bool failed) {
  std::lock_guard lock(traceMu_);
  if (trace_.size() < maxTrace_) {
    trace_.push_back({e.op, e.seq, e.info, e.startedEpochUs, static_cast<double>(endedNs - e.startedNs) / 1e3, failed});
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

std::string FlightRecorder::json(int rank, int size, const std::vector<transport::PeerProgress>& peers) const {
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
  const std::uint64_t last = next_.load(std::memory_order_relaxed);
  const std::uint64_t first = last >= capacity_ ? last - capacity_ + 1 : 1;
  bool comma = false;
  for (std::uint64_t id = first; id <= last; ++id) {
    Entry& slotted = slot(id);
    const Hold hold(slotted);
    const Entry& e = slotted;
    if (e.id != id) continue;
    out += comma ? ",\n  {" : "\n  {";
    comma = true;
    char head[160];
    std::snprintf(head, sizeof head, "\"id\": %llu, \"seq\": %lld, \"op\": ", static_cast<unsigned long long>(e.id),
                  static_cast<long long>(e.seq));
    out += head;
    appendString(out, e.op);
    if (e.info.count > 0) {
      out += ", \"type\": ";
      appendString(out, dataTypeName(e.info.type));
      out += ", \"count\": " + std::to_string(e.info.count) + ", \"reduce\": ";
      appendString(out, reduceKindName(e.info.reduce));
      out += ", \"root\": " + std::to_string(e.info.root);
    }
    const auto us = [](std::int64_t ns) { return ns < 0 ? -1.0 : static_cast<double>(ns) / 1e3; };
    char times[160];
    std::snprintf(times, sizeof times,
                  ", \"state\": \"%s\", \"issued_us\": %.1f, \"started_us\": %.1f, \"ended_us\": %.1f",
                  stateName(static_cast<int>(e.state)), us(e.issuedNs), us(e.startedNs), us(e.endedNs));
    out += times;
    if (!e.error.empty()) {
      out += ", \"error\": ";
      appendString(out, e.error);
    }
    out += "}";
  }
  out += "\n]}\n";
  return out;
}

}  // namespace braid::core
