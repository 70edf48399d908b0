// core::Placement (and whether core::Hierarchy fits it): which host each rank is on and each rank's place among its
// host's ranks, from the hosts the ranks report at creation.
#include "core/placement.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "core/hierarchy.hpp"

namespace braid::core {
namespace {

TEST(Placement, HostsAreNumberedByTheirLowestRankAndLocalRanksFollowRankOrder) {
  // Ranks 0, 2 on host a; 1, 3, 5 on b; 4 on c.
  const std::vector<RankHost> ranks = {{"id-a", "a", {}}, {"id-b", "b", {}}, {"id-a", "a", {}},
                                       {"id-b", "b", {}}, {"id-c", "c", {}}, {"id-b", "b", {}}};
  const std::vector<int> hostOf = {0, 1, 0, 1, 2, 1};
  const std::vector<int> localRank = {0, 0, 1, 1, 0, 2};
  const std::vector<int> localSize = {2, 3, 2, 3, 1, 3};
  for (int r = 0; r < 6; ++r) {
    const Placement p = Placement::of(ranks, r);
    EXPECT_EQ(p.hostOf, hostOf);
    EXPECT_EQ(p.hosts(), 3);
    EXPECT_EQ(p.hostNames, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(p.localRank, localRank[r]) << "rank " << r;
    EXPECT_EQ(p.localSize, localSize[r]) << "rank " << r;
  }
}

TEST(Placement, TheIdentityDecidesNotTheName) {
  // Two network namespaces of one machine share its name but are two hosts to braid; one name twice is no merger.
  const std::vector<RankHost> ranks = {{"boot/net:[1]", "node", {}}, {"boot/net:[2]", "node", {}}};
  EXPECT_EQ(Placement::of(ranks, 1).hosts(), 2);
  EXPECT_EQ(Placement::of(ranks, 1).localSize, 1);
}

TEST(Placement, SaysWhenOneMachineRunsSeveralRanksWhateverTheirHosts) {
  // The machine is the boot id before the first '/': namespaces and BRAID_HOST_ID split hosts, not machines.
  auto several = [](const std::vector<std::string>& ids) {
    std::vector<RankHost> hosts;
    for (const auto& id : ids) hosts.push_back({id, "node", {}});
    for (int r = 0; r < static_cast<int>(ids.size()); ++r) {
      if (Placement::of(hosts, r).machineRunsSeveralRanks != Placement::of(hosts, 0).machineRunsSeveralRanks) {
        ADD_FAILURE() << "ranks disagree";
      }
    }
    return Placement::of(hosts, 0).machineRunsSeveralRanks;
  };
  EXPECT_TRUE(several({"boot1/net:[1]/id:a", "boot1/net:[1]/id:b"}));
  EXPECT_TRUE(several({"boot1/net:[1]", "boot1/net:[2]"}));
  EXPECT_TRUE(several({"boot1/net:[1]", "boot2/net:[1]", "boot2/net:[1]"}));  // one host of two ranks
  EXPECT_FALSE(several({"boot1/net:[1]", "boot2/net:[1]", "boot3/net:[1]"}));
  EXPECT_FALSE(several({"boot1/net:[1]"}));
}

TEST(Placement, WhatRanksSendRoundTrips) {
  const RankHost host{"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/net:[4026531840]", "gpu-node-7.example", {}};
  const RankHost back = Placement::decode(Placement::encode(host));
  EXPECT_EQ(back.identity, host.identity);
  EXPECT_EQ(back.name, host.name);
}

TEST(Placement, TheCpusOfARankTravelWithItsHost) {
  const RankHost host{"boot/net:[1]", "node", {0, 1, 2, 3, 8, 10, 11}};
  EXPECT_EQ(Placement::encode(host), "boot/net:[1]\nnode\n0-3,8,10-11\n-1\n0\n0\n0");
  const RankHost back = Placement::decode(Placement::encode(host));
  EXPECT_EQ(back.cpus, host.cpus);
  // What an older braid sends (no CPUs) still decodes: its CPUs are unknown.
  EXPECT_TRUE(Placement::decode("boot/net:[1]\nnode").cpus.empty());
  EXPECT_EQ(parseCpuList(""), std::vector<int>{});
  EXPECT_EQ(formatCpuList({}), "");
  EXPECT_EQ(parseCpuList("5"), std::vector<int>{5});
  for (const char* bad : {"1-", "a", "3-1", "0,,1", "-2"}) {
    try {
      parseCpuList(bad);
      FAIL() << "'" << bad << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(Placement, TheRanksOfAHostCountTheCpusTheyMayUseTogether) {
  // Two ranks of host A bound to different halves, one of host B: A's ranks see 4 CPUs, B's rank its own 2.
  const std::vector<RankHost> ranks = {{"A", "a", {0, 1}}, {"B", "b", {0, 1}}, {"A", "a", {2, 3}}};
  EXPECT_EQ(Placement::of(ranks, 0).localCpus, 4);
  EXPECT_EQ(Placement::of(ranks, 2).localCpus, 4);
  EXPECT_EQ(Placement::of(ranks, 1).localCpus, 2);
  // Overlapping masks count each CPU once; one unknown mask on the host makes the count unknown.
  EXPECT_EQ(Placement::of({{"A", "a", {0, 1, 2}}, {"A", "a", {1, 2, 3}}}, 0).localCpus, 4);
  EXPECT_EQ(Placement::of({{"A", "a", {0, 1}}, {"A", "a", {}}}, 0).localCpus, 0);
}

TEST(Placement, RanksUnderACpuQuotaCountAtMostIt) {
  // Two ranks of one container, 16 CPUs in their masks and a quota of 4: they keep 4 busy, not 16.
  RankHost a{"A", "a", {0, 1, 2, 3, 4, 5, 6, 7}}, b{"A", "a", {8, 9, 10, 11, 12, 13, 14, 15}};
  a.cpuQuota = b.cpuQuota = 4;
  a.cpuQuotaGroup = b.cpuQuotaGroup = 77;
  EXPECT_EQ(Placement::of({a, b}, 0).localCpus, 4);
  EXPECT_EQ(Placement::of({a, b}, 1).localCpus, 4);
  // Two containers on one host (its network shared), 4 CPUs of quota each: 8 between them.
  b.cpuQuotaGroup = 78;
  EXPECT_EQ(Placement::of({a, b}, 0).localCpus, 8);
  EXPECT_EQ(Placement::of({a, b}, 1).localCpus, 8);
  // A rank without a quota caps nothing.
  b.cpuQuota = 0;
  EXPECT_EQ(Placement::of({a, b}, 0).localCpus, 16);
  // A quota larger than the masks caps nothing; the quota and its cgroup travel with the host.
  a.cpuQuota = b.cpuQuota = 64;
  EXPECT_EQ(Placement::of({a, b}, 0).localCpus, 16);
  a.cpuQuotaGroup = 18446744073709551615ull;
  const RankHost back = Placement::decode(Placement::encode(a));
  EXPECT_EQ(back.cpuQuota, 64);
  EXPECT_EQ(back.cpuQuotaGroup, a.cpuQuotaGroup);
  EXPECT_EQ(Placement::decode("A\na\n0-3\n0\n100").cpuQuota, 0);  // sent by a braid without quotas
  EXPECT_THROW(Placement::decode("A\na\n0-3\n0\n100\n4\n-1"), Error);
  EXPECT_THROW(Placement::decode("A\na\n0-3\n0\n100\n4\nx"), Error);
}

TEST(Placement, EachHostsNumaNodesAndTheSlowestNicsAreTheSameOnEveryRank) {
  RankHost a0{"A", "a", {0, 1}, 0, 25000}, a1{"A", "a", {8, 9}, 1, 25000}, b0{"B", "b", {0}, 0, 10000};
  const RankHost back = Placement::decode(Placement::encode(a1));
  EXPECT_EQ(back.numaNode, 1);
  EXPECT_EQ(back.nicMbps, 25000);
  const std::vector<RankHost> ranks = {a0, b0, a1};
  for (int r = 0; r < 3; ++r) EXPECT_EQ(Placement::of(ranks, r).slowestNicMbps, 10000) << "rank " << r;
  EXPECT_EQ(Placement::of(ranks, 0).localNumaNodes, 2);
  EXPECT_EQ(Placement::of(ranks, 2).localNumaNodes, 2);
  EXPECT_EQ(Placement::of(ranks, 1).localNumaNodes, 1);
  // A rank whose mask spans nodes, or whose NICs do not tell their rate, makes its part unknown.
  a1.numaNode = -1;
  b0.nicMbps = 0;
  EXPECT_EQ(Placement::of({a0, b0, a1}, 0).localNumaNodes, 0);
  EXPECT_EQ(Placement::of({a0, b0, a1}, 0).slowestNicMbps, 0);
  // What a braid that sent only CPUs sends decodes with both unknown; garbage in their place is named.
  const RankHost old = Placement::decode("A\na\n0-3");
  EXPECT_EQ(old.numaNode, -1);
  EXPECT_EQ(old.nicMbps, 0);
  EXPECT_THROW(Placement::decode("A\na\n0-3\nnode0\n100"), Error);
}

TEST(Placement, ARanksNumaNodeAndNicRateComeFromItsHost) {
  topology::Topology host;
  host.numa = {{0, {0, 1, 2, 3}, 0}, {1, {4, 5, 6, 7}, 0}};
  EXPECT_EQ(numaNodeOf(host, {1, 2}), 0);
  EXPECT_EQ(numaNodeOf(host, {5}), 1);
  EXPECT_EQ(numaNodeOf(host, {3, 4}), -1);  // across two nodes
  EXPECT_EQ(numaNodeOf(host, {}), -1);
  EXPECT_EQ(numaNodeOf(host, {9}), -1);
  host.nics = {{"lo", "", "", -1, 65536, true, true, -1, {}},
               {"eth0", "mlx5_core", "0000:3b:00.0", 100000, 9000, true, false, 0, {}},
               {"eth1", "mlx5_core", "0000:3b:00.1", 100000, 9000, true, false, 0, {}},
               {"veth9", "veth", "", -1, 1500, true, false, -1, {}}};
  EXPECT_EQ(nicMbpsOf(host, {"eth0"}), 100000);
  EXPECT_EQ(nicMbpsOf(host, {"eth0", "eth1"}), 200000);  // two rails
  EXPECT_EQ(nicMbpsOf(host, {"veth9"}), 0);              // a virtual NIC does not tell its rate
  EXPECT_EQ(nicMbpsOf(host, {"lo"}), 0);
  EXPECT_EQ(nicMbpsOf(host, {"ib0"}), 0);
  EXPECT_EQ(nicMbpsOf(host, {}), 0);
}

TEST(Hierarchy, FitsSeveralHostsOfEqualRankCountsAboveOne) {
  auto place = [](const std::vector<std::string>& ids) {
    std::vector<RankHost> hosts;
    for (const auto& id : ids) hosts.push_back({id, id, {}});
    return Placement::of(hosts, 0);
  };
  EXPECT_TRUE(Hierarchy::fits(place({"a", "a", "b", "b"})));
  EXPECT_TRUE(Hierarchy::fits(place({"a", "b", "a", "b", "c", "c"})));  // interleaved ranks are fine
  EXPECT_FALSE(Hierarchy::fits(place({"a", "a", "a"})));                // one host
  EXPECT_FALSE(Hierarchy::fits(place({"a", "b", "c"})));                // one rank per host: flat is the same
  EXPECT_FALSE(Hierarchy::fits(place({"a", "a", "b"})));                // uneven hosts
  EXPECT_TRUE(Hierarchy::composes(ReduceOp{ReduceKind::kMax}));
  EXPECT_FALSE(Hierarchy::composes(ReduceOp{ReduceKind::kAvg}));  // integer averages would truncate twice
}

}  // namespace
}  // namespace braid::core
