// `braid model`'s text: a cluster's projected collective times (tuning/cost_model.hpp), and projections set against
// the rows of a bench JSON file with their error.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "braid/cost_model.hpp"

namespace braid::tools {

/// "allreduce on 2 hosts x 8 ranks ..." then, per size from `minBytes` to `maxBytes` by `factor`, the fastest
/// schedule's time and busbw, and the runner-up.
std::string modelReport(tuning::Collective collective, const tuning::Cluster& cluster, std::size_t minBytes,
                        std::size_t maxBytes, std::size_t factor);

/// One measured point: a bench row of braid's.
struct Measured {
  std::size_t bytes = 0;
  int ranks = 0;
  double us = 0;
  std::string dtype;
};

/// The rows of `impl` ("braid"; "braid+graph": the same calls replayed from a CUDA graph, the GPU's time alone) for
/// `collective` in a bench JSON file (braid bench, braid-bench-device, bench/torch_bench.py), wrong ones left out.
std::vector<Measured> measuredRows(const std::string& jsonPath, tuning::Collective collective,
                                   const std::string& impl = "braid");

/// Each measured point against the projection for one host of its ranks joined by `link`: measured and projected
/// time, the schedule, and the error; then the median and largest |error|.
std::string compareReport(tuning::Collective collective, const tuning::LinkCost& link,
                          const std::vector<Measured>& rows);

}  // namespace braid::tools
