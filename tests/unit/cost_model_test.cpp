// tuning/cost_model: each schedule's steps and bytes, checked where the model's answer is known in closed form.
#include "braid/cost_model.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace braid::tuning {
namespace {

Cluster oneHost(int ranks, double latencyUs, double gbs) {
  Cluster c;
  c.ranksPerNode = ranks;
  c.intra = {latencyUs, gbs, "test", true};
  return c;
}

TEST(CostModel, WithoutLatencyARingsBusBandwidthIsTheLinks) {
  // nccl-tests define busbw so that a bandwidth-optimal schedule shows the link rate, whatever the rank count.
  for (int ranks : {2, 3, 4, 8, 16}) {
    const Cluster c = oneHost(ranks, 0, 100);
    for (Collective coll : {Collective::kAllreduce, Collective::kAllgather, Collective::kReduceScatter}) {
      const double us = *projectUs(coll, Schedule::kRing, std::size_t{1} << 30, c);
      EXPECT_NEAR(busBandwidthGBs(coll, std::size_t{1} << 30, ranks, us), 100, 1e-9) << ranks << " ranks";
    }
  }
}

TEST(CostModel, StepsAndBytesOfEachSchedule) {
  // 2 us a step, 1 GB/s: 1 us per 1000 bytes. Every schedule but LL closes with one more step.
  const Cluster c = oneHost(4, 2, 1);
  const std::size_t n = 4000;
  EXPECT_DOUBLE_EQ(*projectUs(Collective::kAllreduce, Schedule::kLL, n, c), 2 + 2 * 3 * 4);      // 1 step, 2x bytes
  EXPECT_DOUBLE_EQ(*projectUs(Collective::kAllreduce, Schedule::kDirect, n, c), 2 * 2 + 3 * 4);  // to 3 peers
  EXPECT_DOUBLE_EQ(*projectUs(Collective::kAllreduce, Schedule::kTwoShot, n, c), 3 * 2 + 2 * 3);
  EXPECT_DOUBLE_EQ(*projectUs(Collective::kAllreduce, Schedule::kRing, n, c), 7 * 2 + 2 * 3);
  EXPECT_DOUBLE_EQ(*projectUs(Collective::kAllreduce, Schedule::kDoubling, n, c), 3 * 2 + 2 * 4);
  EXPECT_DOUBLE_EQ(*projectUs(Collective::kAllgather, Schedule::kRing, n, c), 4 * 2 + 3);
  EXPECT_FALSE(projectUs(Collective::kAllreduce, Schedule::kHierarchical, n, c).has_value());  // one host
}

TEST(CostModel, SmallMessagesTakeFewStepsAndLargeOnesFewBytes) {
  const Cluster c = oneHost(2, defaultLinkCost(Link::kNvlink).latencyUs, defaultLinkCost(Link::kNvlink).bandwidthGBs);
  EXPECT_EQ(projectAll(Collective::kAllreduce, 8, c).front().schedule, Schedule::kLL);
  // Host links have no LL: two steps (direct) at best.
  Cluster shm;
  shm.intra = defaultLinkCost(Link::kShm);
  EXPECT_EQ(projectAll(Collective::kAllreduce, 8, shm).front().schedule, Schedule::kDirect);
  EXPECT_FALSE(projectUs(Collective::kAllreduce, Schedule::kLL, 8, shm).has_value());
  const Cluster eight = oneHost(8, 2.7, 342);
  const auto large = projectAll(Collective::kAllreduce, std::size_t{1} << 30, eight).front().schedule;
  EXPECT_TRUE(large == Schedule::kTwoShot || large == Schedule::kRing) << scheduleName(large);
}

TEST(CostModel, AcrossHostsHierarchyBeatsAFlatRingOnBothCounts) {
  Cluster c;
  c.nodes = 4;
  c.ranksPerNode = 8;
  c.intra = defaultLinkCost(Link::kNvlink);
  c.inter = {10, 100.0 / 8, "test"};  // 100 Gbit/s
  c.nics = 8;
  for (std::size_t n : {std::size_t{1} << 10, std::size_t{1} << 30}) {
    const double flat = *projectUs(Collective::kAllreduce, Schedule::kRing, n, c);
    const double hier = *projectUs(Collective::kAllreduce, Schedule::kHierarchical, n, c);
    EXPECT_LT(hier, flat) << n << " bytes";
  }
  // Large: the eight NICs carry what one carried in the flat ring; busbw approaches 8 NICs' rate.
  const double us = *projectUs(Collective::kAllreduce, Schedule::kHierarchical, std::size_t{1} << 34, c);
  const double busbw = busBandwidthGBs(Collective::kAllreduce, std::size_t{1} << 34, 32, us);
  EXPECT_GT(busbw, 8 * 12.5 * 0.9);
  EXPECT_LT(busbw, 8 * 12.5 * 2 * 31 / 32 * 4 / 3);  // a bound, not a fit: the inter-host term dominates
}

// Rails: a rank that stripes over its host's NICs crosses at their summed rate, never past the NICs there are.
TEST(CostModel, RailsMultiplyWhatOneRankCrossesWith) {
  Cluster c;
  c.nodes = 2;
  c.ranksPerNode = 1;
  c.intra = defaultLinkCost(Link::kShm);
  c.inter = {50, 2.5 / 8, "test"};  // 2.5 Gbit/s
  c.nics = 2;
  const std::size_t n = std::size_t{64} << 20;
  const double one = *projectUs(Collective::kAllreduce, Schedule::kRing, n, c);
  c.rails = 2;
  const double two = *projectUs(Collective::kAllreduce, Schedule::kRing, n, c);
  EXPECT_NEAR(one / two, 2.0, 0.01);
  c.rails = 4;  // only two NICs to stripe over
  EXPECT_DOUBLE_EQ(*projectUs(Collective::kAllreduce, Schedule::kRing, n, c), two);
  // Hosts of 4 ranks on 2 NICs: each rank's share is half a NIC, however many rails it could use.
  c.ranksPerNode = 4;
  c.rails = 1;
  const double hier1 = *projectUs(Collective::kAllreduce, Schedule::kHierarchical, n, c);
  c.rails = 2;
  EXPECT_DOUBLE_EQ(*projectUs(Collective::kAllreduce, Schedule::kHierarchical, n, c), hier1);
}

TEST(CostModel, GpuLinksOfOtherGenerationsScaleTheMeasuredOne) {
  const LinkCost nvlink = defaultLinkCost(Link::kNvlink);
  const LinkCost pcie = defaultLinkCost(Link::kPcie);
  // The generation the default describes, an unknown one, and none: the default as it is.
  for (int generation : {0, 4, 9}) {
    EXPECT_DOUBLE_EQ(gpuLinkCost(Link::kNvlink, generation).bandwidthGBs, nvlink.bandwidthGBs) << generation;
    EXPECT_EQ(gpuLinkCost(Link::kNvlink, generation).source, nvlink.source) << generation;
  }
  EXPECT_DOUBLE_EQ(gpuLinkCost(Link::kNvlink, 3).bandwidthGBs, nvlink.bandwidthGBs * 600 / 900);
  EXPECT_DOUBLE_EQ(gpuLinkCost(Link::kNvlink, 5).bandwidthGBs, nvlink.bandwidthGBs * 2);
  EXPECT_DOUBLE_EQ(gpuLinkCost(Link::kNvlink, 2).latencyUs, nvlink.latencyUs);  // a step costs what it did
  EXPECT_NE(gpuLinkCost(Link::kNvlink, 3).source.find("generation 4 to 3"), std::string::npos);
  EXPECT_DOUBLE_EQ(gpuLinkCost(Link::kPcie, 5).bandwidthGBs, pcie.bandwidthGBs * 2);
  EXPECT_DOUBLE_EQ(gpuLinkCost(Link::kPcie, 3).bandwidthGBs, pcie.bandwidthGBs / 2);
  EXPECT_DOUBLE_EQ(gpuLinkCost(Link::kPcie, 1).bandwidthGBs, pcie.bandwidthGBs);  // too old to price: unscaled
  // Links that are not a GPU's have no generation.
  EXPECT_DOUBLE_EQ(gpuLinkCost(Link::kShm, 5).bandwidthGBs, defaultLinkCost(Link::kShm).bandwidthGBs);
}

TEST(CostModel, NamesRoundTrip) {
  for (Link l : {Link::kNvlink, Link::kPcie, Link::kShm, Link::kTcp}) {
    EXPECT_EQ(parseLink(linkName(l)), l);
    EXPECT_FALSE(defaultLinkCost(l).source.empty());
  }
  EXPECT_FALSE(parseLink("infiniband").has_value());
  EXPECT_EQ(parseCollective("reducescatter"), Collective::kReduceScatter);
}

}  // namespace
}  // namespace braid::tuning
