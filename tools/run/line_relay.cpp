// The launcher's output relay (see line_relay.hpp): line assembly and the blocking-safe write to the destination.
#include "run/line_relay.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace braid::tools {

namespace {

// A line is held back until its newline so lines of different ranks never interleave; past 1 MiB it is written as
// it is, so that a rank printing without newlines cannot grow the launcher's memory without bound.
constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;
// A destination that takes nothing now (a non-blocking fd whose reader is slow) is polled this long, then the write
// is tried again: the launcher's own poll period, so a stalled reader is noticed no later than anything else.
constexpr int kWritableWaitMs = 200;

}  // namespace

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, kWritableWaitMs);
    } else if (n < 0 && errno != EINTR) {
      return false;
    }
  }
  return true;
}

void LineRelay::feed(std::string_view data) {
  const std::size_t lastNewline = data.rfind('\n');
  pending_.append(data);
  if (lastNewline == std::string_view::npos) {
    if (pending_.size() >= kMaxLineBytes) flush();
    return;
  }
  const std::size_t end = pending_.size() - (data.size() - lastNewline - 1);  // one past the last newline
  std::string out;
  out.reserve(end + prefix_.size() * 8);
  for (std::size_t start = 0; start < end;) {
    const std::size_t newline = pending_.find('\n', start);
    out += prefix_;
    out.append(pending_, start, newline + 1 - start);
    start = newline + 1;
  }
  pending_.erase(0, end);
  emit(out);
  if (pending_.size() >= kMaxLineBytes) flush();
}

void LineRelay::flush() {
  if (pending_.empty()) return;
  std::string out = prefix_;
  out += pending_;
  out += '\n';
  pending_.clear();
  emit(out);
}

void LineRelay::emit(std::string_view text) {
  if (dest_ >= 0 && !writeAll(dest_, text)) dest_ = -1;
}

}  // namespace braid::tools
