// Over TCP the algorithm is data too (tuning/net_selector): direct up to BRAID_DIRECT_MAX_BYTES, recursive doubling
// instead from 4 ranks on, the pipelined ring above; explain says which and why.
#include "tuning/net_selector.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"

namespace braid::tuning {
namespace {

Settings withDirectMax(std::size_t bytes) {
  Settings s;
  s.directMaxBytes = bytes;
  s.tcpStreams = 2;
  return s;
}

TEST(NetSelector, DirectThenRingAndDoublingFromFourRanks) {
  const Settings s = withDirectMax(64 * 1024);
  EXPECT_EQ(chooseNetAllreduce(8, 2, s).algorithm, NetAlgorithm::kDirect);
  EXPECT_EQ(chooseNetAllreduce(64 * 1024, 3, s).algorithm, NetAlgorithm::kDirect);
  EXPECT_EQ(chooseNetAllreduce(64 * 1024, 4, s).algorithm, NetAlgorithm::kDoubling);
  EXPECT_EQ(chooseNetAllreduce(64 * 1024 + 1, 4, s).algorithm, NetAlgorithm::kRing);
  EXPECT_EQ(chooseNetAllreduce(std::size_t{1} << 30, 1, s).algorithm, NetAlgorithm::kDirect);  // nothing to send
  EXPECT_EQ(chooseNetAllreduce(1024, 8, withDirectMax(0)).algorithm, NetAlgorithm::kRing);
}

TEST(NetSelector, ExplainNamesTheAlgorithmAndTheKnob) {
  const Settings s = withDirectMax(64 * 1024);
  const std::string ring = explainNetAllreduce(chooseNetAllreduce(1 << 20, 4, s), 1 << 20, 4, s);
  EXPECT_EQ(ring.rfind("ring: 1048576 B > BRAID_DIRECT_MAX_BYTES (65536)", 0), 0u) << ring;
  EXPECT_NE(ring.find("2 TCP stream(s) per peer"), std::string::npos) << ring;
  const std::string doubling = explainNetAllreduce(chooseNetAllreduce(8, 8, s), 8, 8, s);
  EXPECT_EQ(doubling.rfind("doubling:", 0), 0u) << doubling;
}

}  // namespace
}  // namespace braid::tuning

namespace braid::tuning {
namespace {

TEST(NetSelector, HierarchyFromItsThresholdOrAsForced) {
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
