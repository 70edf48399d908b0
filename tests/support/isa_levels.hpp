// The CPU kernel sets (reduce_cpu.hpp) this machine runs, for tests that check every one of them.
#pragma once

#include <string>
#include <vector>

namespace braid::testing {

/// "generic", then "avx2" and "avx512" where the CPU has them; leaves the cap at "auto".
std::vector<std::string> isaLevels();

}  // namespace braid::testing
