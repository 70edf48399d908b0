#include "tuning/hierarchy.hpp"

#include "base/error.hpp"

namespace braid::tuning {

bool useHierarchy(std::size_t bytes, const Settings& settings) {
  if (settings.hierarchy == "on") return true;
  if (settings.hierarchy == "off") return false;
  if (!settings.hierarchy.empty() && settings.hierarchy != "auto") {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_HIERARCHY=", settings.hierarchy, " is not one of auto, on, off");
  }
  // Measured on the namespace bed (2 hosts x 2 ranks at 10 Gbit/s, docs/BENCHMARKS.md): flat 1.8x faster at 1 MiB,
  // hierarchical 1.6x at 4 MiB and 1.75x at 16 MiB. The cost model put the crossover near 8 KiB: it has no CPU
  // contention, and there 4 ranks shared 2 cores. Hosts with a core per rank should cross lower.
  return bytes >= kHierarchyMinBytes;
}

}  // namespace braid::tuning
