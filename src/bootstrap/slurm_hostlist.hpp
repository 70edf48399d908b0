// Slurm's compressed host lists ("node[01-03,07],gpu-a,x[1-2]-ib"), as found in SLURM_STEP_NODELIST and
// SLURM_JOB_NODELIST. braid needs the first host (where rank 0 runs: Slurm gives task 0 to the first node of the
// step); the full expansion exists for tests and diagnostics.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace braid::bootstrap {

/// Expands `list` in Slurm's order (bracket groups left to right, the last varying fastest; a range keeps the
/// zero padding of its lower bound: "[08-10]" -> 08 09 10) and returns at most `limit` hosts. The whole text is
/// checked even when the limit stops the expansion early. InvalidArgument "`source`='list' is not a Slurm host
/// list: why" when it is malformed (empty, unbalanced or nested brackets, empty entries, bad or backward ranges).
std::vector<std::string> expandSlurmHostlist(std::string_view list, std::size_t limit,
                                             std::string_view source = "host list");

/// The first host of `list` (same checks and errors as expandSlurmHostlist).
std::string firstSlurmHost(std::string_view list, std::string_view source = "host list");

}  // namespace braid::bootstrap
