// How `braid bench` shows its rows: the nccl-tests table (with peers' columns and ratios), JSON, a plot.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_options.hpp"

namespace braid::tools {

/// The table header for braid's own rows printed live.
void printHeader(std::FILE* out, const std::string& collective, const BenchOptions& options, int ranks,
                 const std::string& machine);
void printRow(std::FILE* out, const BenchRow& row, const std::string& algorithm);

/// braid's rows beside each peer's (same collective and size): time, busbw and braid/peer ratios.
void printComparison(std::FILE* out, const std::vector<BenchRow>& rows, const std::vector<std::string>& peers);

/// busbw vs size, one line per implementation and collective, log-x, through gnuplot. Throws when gnuplot
/// is missing (naming the package) or fails.
void plotBusbw(const std::string& path, const std::vector<BenchRow>& rows, const std::string& title);

}  // namespace braid::tools
