// Whether an allreduce across hosts goes hierarchical: from a measured size, or as BRAID_HIERARCHY forces.
#include "tuning/hierarchy.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"

namespace braid::tuning {
namespace {

TEST(Hierarchy, FromItsThresholdOrAsForced) {
  Settings s;
  s.hierarchy = "auto";
  EXPECT_FALSE(useHierarchy(kHierarchyMinBytes - 1, s));
  EXPECT_TRUE(useHierarchy(kHierarchyMinBytes, s));
  s.hierarchy = "on";
  EXPECT_TRUE(useHierarchy(8, s));
  s.hierarchy = "off";
  EXPECT_FALSE(useHierarchy(std::size_t{1} << 30, s));
  s.hierarchy = "sometimes";
  EXPECT_THROW(useHierarchy(8, s), Error);
}

}  // namespace
}  // namespace braid::tuning
