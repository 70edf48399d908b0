// braid's side of `braid bench`: one rank's measurement of a sweep with nccl-tests' method.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/bench_options.hpp"
#include "braid/braid.hpp"

namespace braid::tools {

/// Measures `collective` over every size of the sweep on `comm`; every rank returns the same rows.
/// `onRow` (may be empty) is called on each rank as each row completes, for live output; `onSize` (may be empty)
/// before each size is measured, with its index and the number of sizes, for a progress line.
std::vector<BenchRow> runSweep(
    Communicator& comm, const std::string& collective, const BenchOptions& options,
    const std::function<void(const BenchRow&, const std::string& algorithm)>& onRow,
    const std::function<void(std::size_t bytes, std::size_t index, std::size_t total)>& onSize = nullptr);

}  // namespace braid::tools
