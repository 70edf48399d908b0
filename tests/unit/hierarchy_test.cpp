// Whether an allreduce across hosts goes hierarchical: from a measured size, or as BRAID_HIERARCHY forces.
#include "tuning/hierarchy.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "base/error.hpp"

namespace braid::tuning {
namespace {

TEST(Hierarchy, FromItsThresholdOrAsForced) {
  Settings s = Settings::fromEnvironment([](const std::string&) { return std::optional<std::string>(); });
  EXPECT_EQ(s.hierarchy, "auto");
  EXPECT_EQ(s.hierarchyMinBytes, std::size_t{2} << 20);  // measured on the namespace bed
  EXPECT_FALSE(useHierarchy((std::size_t{2} << 20) - 1, s));
  EXPECT_TRUE(useHierarchy(std::size_t{2} << 20, s));
  // A crossover measured elsewhere (the environment or a tune file) moves it.
  s = Settings::fromEnvironment([](const std::string& name) {
    return name == "BRAID_HIERARCHY_MIN_BYTES" ? std::optional<std::string>("256K") : std::nullopt;
  });
  EXPECT_FALSE(useHierarchy((std::size_t{256} << 10) - 1, s));
  EXPECT_TRUE(useHierarchy(std::size_t{256} << 10, s));
  s.hierarchy = "on";
  EXPECT_TRUE(useHierarchy(8, s));
  s.hierarchy = "off";
  EXPECT_FALSE(useHierarchy(std::size_t{1} << 30, s));
  s.hierarchy = "sometimes";
  EXPECT_THROW(useHierarchy(8, s), Error);
}

}  // namespace
}  // namespace braid::tuning
