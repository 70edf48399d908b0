#include "support/isa_levels.hpp"

#include "algorithms/host/reduce_cpu.hpp"

namespace braid::testing {

std::vector<std::string> isaLevels() {
  std::vector<std::string> levels;
  for (const char* name : {"generic", "avx2", "avx512"}) {
    host::setReduceIsaCap(name);
    if (std::string(host::reduceIsaName()) == name) levels.push_back(name);
  }
  host::setReduceIsaCap("auto");
  return levels;
}

}  // namespace braid::testing
