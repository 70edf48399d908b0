#include "bench/bench_report.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "errors.hpp"

namespace braid::tools {

namespace {

std::string humanBytes(std::size_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 3 && static_cast<std::size_t>(v) % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g %s", v, units[u]);
  return buf;
}

}  // namespace

void printHeader(std::FILE* out, const std::string& collective, const BenchOptions& o, int ranks,
                 const std::string& machine) {
  const std::string loops = o.minLoopMs > 0 ? strCat(">= ", o.iterations, " iterations (as many as ", o.minLoopMs,
                                                     " ms takes; each row's count in --json)")
                                            : strCat(o.iterations, " iterations");
  std::fprintf(out, "# braid bench %s: %d ranks, %s, %s%s, %s memory, %d warm-up + median of %d x %s\n",
               collective.c_str(), ranks, o.dtype.c_str(), reducesData(collective) ? o.op.c_str() : "no op",
               o.inplace ? ", in place" : "", o.mem.c_str(), o.warmup, o.repetitions, loops.c_str());
  std::fprintf(out, "# machine: %s\n", machine.c_str());
  std::fprintf(out, "# %12s %12s %9s %7s %5s %11s %10s %10s %7s  %s\n", "size(B)", "count", "type", "redop", "root",
               "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong", "algorithm");
  std::fflush(out);
}

void printRow(std::FILE* out, const BenchRow& r, const std::string& algorithm) {
  char wrong[24];
  if (r.wrong < 0) {
    std::snprintf(wrong, sizeof wrong, "N/A");
  } else {
    std::snprintf(wrong, sizeof wrong, "%ld", r.wrong);
  }
  std::fprintf(out, "  %12zu %12zu %9s %7s %5d %11.2f %10.2f %10.2f %7s  %s\n", r.bytes, r.count, r.dtype.c_str(),
               r.redop.empty() ? "none" : r.redop.c_str(), r.root, r.timeUs, r.algbwGBs, r.busbwGBs, wrong,
               algorithm.c_str());
  std::fflush(out);
}

void printComparison(std::FILE* out, const std::vector<BenchRow>& rows, const std::vector<std::string>& peers) {
  // (collective, bytes) -> impl -> row
  std::map<std::pair<std::string, std::size_t>, std::map<std::string, const BenchRow*>> table;
  for (const auto& r : rows) table[{r.collective, r.bytes}][r.impl] = &r;
  std::string current;
  for (const auto& [key, impls] : table) {
    if (key.first != current) {
      current = key.first;
      std::fprintf(out, "\n# %s: braid vs %s (ratio = braid busbw / peer busbw; time ratio = braid / peer)\n",
                   current.c_str(), peers.empty() ? "-" : peers.front().c_str());
      std::fprintf(out, "# %10s %12s %12s", "size", "braid us", "braid GB/s");
      for (const auto& p : peers) {
        std::fprintf(out, " %10s %10s %8s %8s", (p + " us").c_str(), (p + " GB/s").c_str(), "busbw x", "time x");
      }
      std::fprintf(out, "\n");
    }
    const BenchRow* braid = impls.count("braid") ? impls.at("braid") : nullptr;
    std::fprintf(out, "  %10s", humanBytes(key.second).c_str());
    if (braid) {
      std::fprintf(out, " %12.2f %12.2f", braid->timeUs, braid->busbwGBs);
    } else {
      std::fprintf(out, " %12s %12s", "-", "-");
    }
    for (const auto& p : peers) {
      const BenchRow* peer = impls.count(p) ? impls.at(p) : nullptr;
      if (!peer) {
        std::fprintf(out, " %10s %10s %8s %8s", "-", "-", "-", "-");
        continue;
      }
      const double bw = braid && peer->busbwGBs > 0 ? braid->busbwGBs / peer->busbwGBs : 0;
      const double tx = braid && peer->timeUs > 0 ? braid->timeUs / peer->timeUs : 0;
      std::fprintf(out, " %10.2f %10.2f %8.2f %8.2f", peer->timeUs, peer->busbwGBs, bw, tx);
    }
    std::fprintf(out, "\n");
  }
  std::fflush(out);
}

void plotBusbw(const std::string& path, const std::vector<BenchRow>& rows, const std::string& title) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    throw std::runtime_error("--plot needs gnuplot (Debian: apt-get install gnuplot-nox)");
  }
  char dir[] = "/tmp/braid-plot-XXXXXX";
  if (!::mkdtemp(dir)) throw std::runtime_error("cannot make a temporary directory for the plot");
  // One panel per collective, one line per implementation: readable however many collectives were run.
  std::map<std::string, std::map<std::string, std::vector<const BenchRow*>>> panels;
  for (const auto& r : rows) panels[r.collective][r.impl].push_back(&r);
  const int count = static_cast<int>(panels.size());
  const int columns = count == 1 ? 1 : count <= 4 ? 2 : 3;
  const int lines = (count + columns - 1) / columns;
  const std::string script = std::string(dir) + "/plot.gp";
  std::ofstream gp(script);
  gp << "set terminal pngcairo size " << (columns == 1 ? 1000 : 520 * columns) << ","
     << (columns == 1 ? 600 : 380 * lines) << " font ',10'\nset output '" << path << "'\n"
     << "set logscale x 2\nset format x '%.0b%B'\nset key top left\nset grid\n"
     << "set multiplot layout " << lines << "," << columns << " title '" << title << "'\n";
  int file = 0;
  for (const auto& [collective, impls] : panels) {
    gp << "set title '" << collective << "'\nset xlabel 'bytes'\nset ylabel 'busbw (GB/s)'\n";
    std::string plots;
    for (const auto& [impl, pts] : impls) {
      const std::string data = std::string(dir) + "/s" + std::to_string(file++) + ".dat";
      std::ofstream d(data);
      for (const BenchRow* r : pts) d << r->bytes << " " << r->busbwGBs << "\n";
      plots += (plots.empty() ? "plot " : ", ") + std::string("'") + data +
               "' using 1:2 with linespoints lw 2 title '" + impl + "'";
    }
    gp << plots << "\n";
  }
  gp << "unset multiplot\n";
  gp.close();
  const int rc = std::system(("gnuplot '" + script + "' 2>" + dir + "/err.txt").c_str());
  std::filesystem::remove_all(dir);
  if (rc != 0) throw std::runtime_error("gnuplot failed to write " + path);
}

}  // namespace braid::tools
