#include "core/flight_recorder.hpp"

#include <cstdio>

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

}  // namespace

FlightRecorder::FlightRecorder(std::size_t capacity) : ring_(capacity == 0 ? 1 : capacity) {}

double FlightRecorder::nowUs() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
}

FlightRecorder::Entry* FlightRecorder::find(std::uint64_t id) {
  Entry& e = ring_[id % ring_.size()];
  return e.id == id ? &e : nullptr;
}

std::uint64_t FlightRecorder::issued(const char* op, std::int64_t seq, const CallInfo& info) {
  const double t = nowUs();
  std::lock_guard lock(mu_);
  const std::uint64_t id = ++next_;
  Entry& e = ring_[id % ring_.size()];
  e.id = id;
  e.seq = seq;
  e.op = op;
  e.info = info;
  e.state = State::kQueued;
  e.issuedUs = t;
  e.startedUs = e.endedUs = -1;
  e.error.clear();
  return id;
}

void FlightRecorder::started(std::uint64_t id) {
  const double t = nowUs();
  std::lock_guard lock(mu_);
  if (Entry* e = find(id)) {
    e->state = State::kRunning;
    e->startedUs = t;
  }
}

void FlightRecorder::ended(std::uint64_t id, const Error* error) {
  const double t = nowUs();
  std::lock_guard lock(mu_);
  if (Entry* e = find(id)) {
    e->state = error ? State::kFailed : State::kDone;
    e->endedUs = t;
    if (error) e->error = error->what();
  }
}

std::string FlightRecorder::json(int rank, int size) const {
  std::lock_guard lock(mu_);
  std::string out = "{\"rank\": " + std::to_string(rank) + ", \"size\": " + std::to_string(size) + ", \"calls\": [";
  const std::uint64_t first = next_ >= ring_.size() ? next_ - ring_.size() + 1 : 1;
  bool comma = false;
  for (std::uint64_t id = first; id <= next_; ++id) {
    const Entry& e = ring_[id % ring_.size()];
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
    char times[160];
    std::snprintf(times, sizeof times,
                  ", \"state\": \"%s\", \"issued_us\": %.1f, \"started_us\": %.1f, \"ended_us\": %.1f",
                  stateName(static_cast<int>(e.state)), e.issuedUs, e.startedUs, e.endedUs);
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
