// Where one algorithm's measured times stop beating another's: the arithmetic of `braid tune`, apart from the
// measuring so that it is tested on made-up sweeps.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace braid::tools {

struct Crossover {
  std::size_t directMaxBytes = 0;  ///< the largest size for which direct runs
  std::string why;
};

/// Direct keeps every size up to the first one at which reduce-scatter + allgather was faster by more than 3%
/// (two sweeps' noise) and stayed faster at every larger size measured; the answer is the size before it. Sizes
/// present in only one sweep are ignored.
Crossover directCrossover(const std::map<std::size_t, double>& directUs, const std::map<std::size_t, double>& rsagUs);

/// The two sweeps side by side.
std::string crossoverTable(const std::map<std::size_t, double>& directUs, const std::map<std::size_t, double>& rsagUs);

}  // namespace braid::tools
