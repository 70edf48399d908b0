#include "tuning/hierarchy.hpp"

#include "base/error.hpp"

namespace braid::tuning {

bool useHierarchy(std::size_t bytes, const Settings& settings) {
  if (settings.hierarchy == "on") return true;
  if (settings.hierarchy == "off") return false;
  if (!settings.hierarchy.empty() && settings.hierarchy != "auto") {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_HIERARCHY=", settings.hierarchy, " is not one of auto, on, off");
  }
  // A measured crossover (BRAID_HIERARCHY_MIN_BYTES, config.cpp says where its default comes from).
  return bytes >= settings.hierarchyMinBytes;
}

}  // namespace braid::tuning
