// Minimal leveled logging to stderr, "braid[rank 3] warn: ...". The level comes from BRAID_LOG.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

namespace braid {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

/// Parses BRAID_LOG's value; unknown names fall back to warn (and say so once).
void setLogLevel(std::string_view name);

namespace detail {
extern std::atomic<int> gLogLevel;  // -1 until BRAID_LOG was read or set
int readLogLevel();                 // reads BRAID_LOG into gLogLevel and returns it
}  // namespace detail

/// Inline: calls ask it on their way (the selector's reasoning at info).
inline bool logEnabled(LogLevel level) {
  int current = detail::gLogLevel.load(std::memory_order_relaxed);
  if (current < 0) [[unlikely]]
    current = detail::readLogLevel();
  return static_cast<int>(level) <= current;
}
/// Writes one line atomically (one write(2)) so lines of several ranks never interleave mid-line.
void logLine(LogLevel level, int rank, std::string_view message);

}  // namespace braid
