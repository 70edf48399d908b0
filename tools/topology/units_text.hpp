// How the topology commands (detect, doctor, env) write sizes, versions and link speeds, so they all say it alike.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace braid::tools {

/// "140.4 GiB".
inline std::string gibText(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return text;
}

/// "64 MiB", or in GiB from 1 GiB on.
inline std::string sizeText(std::uint64_t bytes) {
  if (bytes >= (std::uint64_t{1} << 30)) return gibText(bytes);
  char text[32];
  std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(bytes) / (1024.0 * 1024));
  return text;
}

/// A CUDA version number as the driver gives it (13000) -> "13.0".
inline std::string cudaVersionText(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

/// A NIC's speed in Mb/s -> "400 Gb/s", "2.5 Gb/s", "100 Mb/s", or "speed unknown" (negative).
inline std::string linkSpeedText(int mbps) {
  if (mbps < 0) return "speed unknown";
  if (mbps < 1000) return std::to_string(mbps) + " Mb/s";
  char text[32];
  std::snprintf(text, sizeof text, mbps % 1000 == 0 ? "%.0f Gb/s" : "%.1f Gb/s", mbps / 1000.0);
  return text;
}

}  // namespace braid::tools
