// Where one algorithm's measured times stop beating another's: the arithmetic of `braid tune`, apart from the
// measuring so that it is tested on made-up sweeps.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace braid::tools {

struct Crossover {
  std::size_t maxBytes = 0;  ///< the largest size the first algorithm keeps
  std::string why;
};

/// The first algorithm (the one for small sizes) keeps every size up to the first one at which the second was
/// faster by more than 3% (two sweeps' noise) and stayed faster at every larger size measured; the answer is the
/// size before it. Sizes present in only one sweep are ignored. `first`/`second` name them in `why`.
Crossover keepUpTo(const std::map<std::size_t, double>& firstUs, const std::map<std::size_t, double>& secondUs,
                   const std::string& first, const std::string& second);

/// The two sweeps side by side.
std::string crossoverTable(const std::map<std::size_t, double>& firstUs, const std::map<std::size_t, double>& secondUs,
                           const std::string& first, const std::string& second);

}  // namespace braid::tools
