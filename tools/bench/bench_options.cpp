#include "bench/bench_options.hpp"

namespace braid::tools {

std::vector<std::size_t> sweepSizes(const BenchOptions& options, std::size_t elementBytes) {
  std::vector<std::size_t> sizes;
  const std::size_t factor = options.factor < 2 ? 2 : options.factor;
  for (std::size_t bytes = options.minBytes; bytes <= options.maxBytes; bytes *= factor) {
    const std::size_t whole = bytes / elementBytes * elementBytes;
    // Sizes below one element per rank round to nothing: left out, by braid and by every peer alike.
    if (whole > 0 && (sizes.empty() || sizes.back() != whole)) sizes.push_back(whole);
    if (bytes > options.maxBytes / factor) break;
  }
  return sizes;
}

double busFactor(const std::string& collective, int ranks) {
  const double n = ranks;
  if (collective == "allreduce") return 2.0 * (n - 1) / n;
  if (collective == "allgather" || collective == "reducescatter" || collective == "alltoall" ||
      collective == "gather" || collective == "scatter") {
    return (n - 1) / n;
  }
  return 1.0;
}

bool reducesData(const std::string& c) { return c == "allreduce" || c == "reduce" || c == "reducescatter"; }

bool hasRoot(const std::string& c) { return c == "broadcast" || c == "reduce" || c == "gather" || c == "scatter"; }

const std::vector<std::string>& benchCollectives() {
  static const std::vector<std::string> kAll = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                                                "alltoall",  "gather",    "scatter",       "sendrecv"};
  return kAll;
}

}  // namespace braid::tools
