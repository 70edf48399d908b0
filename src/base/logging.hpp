// Minimal leveled logging to stderr, "braid[rank 3] warn: ...". The level comes from BRAID_LOG.
#pragma once

#include <string>
#include <string_view>

namespace braid {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

/// Parses BRAID_LOG's value; unknown names fall back to warn (and say so once).
void setLogLevel(std::string_view name);
bool logEnabled(LogLevel level);
/// Writes one line atomically (one write(2)) so lines of several ranks never interleave mid-line.
void logLine(LogLevel level, int rank, std::string_view message);

}  // namespace braid
