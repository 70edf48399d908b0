#include "base/logging.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace braid {

namespace detail {
std::atomic<int> gLogLevel{-1};
}  // namespace detail

namespace {

using detail::gLogLevel;

int levelFromName(std::string_view name) {
  if (name == "error") return 0;
  if (name == "warn" || name == "warning" || name.empty()) return 1;
  if (name == "info") return 2;
  if (name == "debug") return 3;
  if (name == "trace") return 4;
  return -1;
}

constexpr const char* kNames[] = {"error", "warn", "info", "debug", "trace"};

}  // namespace

void setLogLevel(std::string_view name) {
  const int level = levelFromName(name);
  gLogLevel.store(level < 0 ? 1 : level, std::memory_order_relaxed);
  if (level < 0) logLine(LogLevel::kWarn, -1, "unknown BRAID_LOG level '" + std::string(name) + "', using warn");
}

int detail::readLogLevel() {
  const char* env = std::getenv("BRAID_LOG");
  int current = levelFromName(env ? env : "");
  if (current < 0) current = 1;
  gLogLevel.store(current, std::memory_order_relaxed);
  return current;
}

void logLine(LogLevel level, int rank, std::string_view message) {
  if (!logEnabled(level)) return;
  std::string line = "braid";
  if (rank >= 0) line += "[rank " + std::to_string(rank) + "]";
  line += " ";
  line += kNames[static_cast<int>(level)];
  line += ": ";
  line += message;
  line += '\n';
  // One write so concurrent lines stay whole; a failed log write has nowhere better to go.
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace braid
