#include "model/model_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "errors.hpp"

namespace braid::tools {

namespace {

const char* collectiveName(tuning::Collective c) {
  switch (c) {
    case tuning::Collective::kAllreduce:
      return "allreduce";
    case tuning::Collective::kAllgather:
      return "allgather";
    case tuning::Collective::kReduceScatter:
      return "reducescatter";
  }
  return "?";
}

// "8 B", "64 KiB", "16 MiB", "1 GiB" (sizes the sweeps use: whole units).
std::string sizeLabel(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, v == std::floor(v) ? "%.0f %s" : "%.1f %s", v, units[u]);
  return text;
}

std::string linkText(const tuning::LinkCost& l) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f us per step, %.1f GB/s", l.latencyUs, l.bandwidthGBs);
  return text;
}

}  // namespace

std::string modelReport(tuning::Collective collective, const tuning::Cluster& c, std::size_t minBytes,
                        std::size_t maxBytes, std::size_t factor) {
  std::ostringstream out;
  out << collectiveName(collective) << " on " << c.nodes << " host(s) x " << c.ranksPerNode
      << " rank(s): a projection from link costs, not a measurement\n";
  out << "  inside a host: " << linkText(c.intra) << (c.intra.source.empty() ? "" : " (" + c.intra.source + ")")
      << "\n";
  if (c.nodes > 1) {
    out << "  between hosts: " << c.nics << " NIC(s) per host, a rank striping over " << std::min(c.nics, c.rails)
        << ", each " << linkText(c.inter) << (c.inter.source.empty() ? "" : " (" + c.inter.source + ")") << "\n";
  }
  char line[160];
  std::snprintf(line, sizeof line, "%12s  %-12s %12s %12s   %s\n", "size", "schedule", "time us", "busbw GB/s",
                "next best");
  out << line;
  for (std::size_t bytes = minBytes; bytes <= maxBytes && bytes > 0; bytes *= factor) {
    const auto all = tuning::projectAll(collective, bytes, c);
    if (all.empty()) break;
    const auto& best = all.front();
    std::string next = "-";
    if (all.size() > 1) {
      char n[64];
      std::snprintf(n, sizeof n, "%s %.1f us", tuning::scheduleName(all[1].schedule), all[1].us);
      next = n;
    }
    std::snprintf(line, sizeof line, "%12s  %-12s %12.1f %12.2f   %s\n", sizeLabel(bytes).c_str(),
                  tuning::scheduleName(best.schedule), best.us,
                  tuning::busBandwidthGBs(collective, bytes, c.ranks(), best.us), next.c_str());
    out << line;
    if (factor < 2) break;
  }
  return out.str();
}

std::vector<Measured> measuredRows(const std::string& jsonPath, tuning::Collective collective,
                                   const std::string& impl) {
  std::ifstream in(jsonPath);
  if (!in) fail(ErrorCode::kInvalidArgument, {}, "cannot read ", jsonPath);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    fail(ErrorCode::kInvalidArgument, {}, jsonPath, " is not JSON: ", e.what());
  }
  if (!doc.contains("results") || !doc["results"].is_array()) {
    fail(ErrorCode::kInvalidArgument, {}, jsonPath, " has no \"results\" array (a braid bench JSON file)");
  }
  std::vector<Measured> rows;
  for (const auto& r : doc["results"]) {
    if (r.value("impl", "") != impl || r.value("collective", "") != collectiveName(collective)) continue;
    if (r.value("wrong", 0) != 0) continue;  // a wrong result measures nothing
    rows.push_back(
        {r.value("bytes", std::size_t{0}), r.value("ranks", 0), r.value("time_us", 0.0), r.value("dtype", "")});
  }
  std::sort(rows.begin(), rows.end(), [](const Measured& a, const Measured& b) { return a.bytes < b.bytes; });
  return rows;
}

std::string compareReport(tuning::Collective collective, const tuning::LinkCost& cost,
                          const std::vector<Measured>& rows) {
  std::ostringstream out;
  out << collectiveName(collective) << " measured against the model (" << linkText(cost) << ": " << cost.source
      << ")\n";
  char line[160];
  std::snprintf(line, sizeof line, "%12s %-9s %6s %12s %12s  %-10s %8s\n", "size", "type", "ranks", "measured us",
                "model us", "schedule", "error");
  out << line;
  std::vector<double> errors;
  for (const Measured& m : rows) {
    if (m.us <= 0 || m.ranks < 1) continue;
    tuning::Cluster c;
    c.nodes = 1;
    c.ranksPerNode = m.ranks;
    c.intra = cost;
    const auto all = tuning::projectAll(collective, m.bytes, c);
    if (all.empty()) continue;
    const double error = (all.front().us - m.us) / m.us;
    errors.push_back(std::fabs(error));
    std::snprintf(line, sizeof line, "%12s %-9s %6d %12.2f %12.2f  %-10s %+7.0f%%\n", sizeLabel(m.bytes).c_str(),
                  m.dtype.c_str(), m.ranks, m.us, all.front().us, tuning::scheduleName(all.front().schedule),
                  error * 100);
    out << line;
  }
  if (errors.empty()) {
    out << "no measured rows for " << collectiveName(collective) << "\n";
    return out.str();
  }
  std::sort(errors.begin(), errors.end());
  std::snprintf(line, sizeof line, "%zu points: median |error| %.0f%%, largest %.0f%%\n", errors.size(),
                errors[errors.size() / 2] * 100, errors.back() * 100);
  out << line;
  return out.str();
}

}  // namespace braid::tools
