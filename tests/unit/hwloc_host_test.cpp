// What braid reads of a host through hwloc: CPUs, cores, caches, NUMA nodes, and the NUMA node of each PCI device,
// from hwloc's own descriptions of machines we do not have (an XML export with a GPU and a NIC on different
// packages, and synthetic ones), and from this host.
#include "topology/hwloc_host.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace braid::topology {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(BRAID_FIXTURES_DIR) + "/hwloc/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(HwlocHost, ReadsPackagesCoresCachesNodesAndPlacesPciDevices) {
  Topology t;
  std::string why;
  const HwlocView view = readHwloc(t, HwlocSource{.xml = fixture("two-packages-gpu-nic.xml")}, why);
  ASSERT_EQ(why, "");
  EXPECT_EQ(t.logicalCpus, 8);
  EXPECT_EQ(t.cores, 4);
  EXPECT_EQ(t.sockets, 2);
  EXPECT_EQ(t.cpuModel, "Example CPU @ 2.00GHz");
  EXPECT_EQ(t.l2CacheBytes, 1000000u);
  EXPECT_EQ(t.l3CacheBytes, 32000000u);
  ASSERT_EQ(t.numa.size(), 2u);
  EXPECT_EQ(t.numa[0].cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t.numa[1].cpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(t.numa[1].memoryBytes, 8000000000u);
  // The GPU hangs below package 0's host bridge, the NIC below package 1's; CUDA names bus ids in upper case.
  EXPECT_EQ(numaOfPci(view, "0000:17:00.0", -1), 0);
  EXPECT_EQ(numaOfPci(view, "0000:AB:00.0", -1), 1);
  EXPECT_EQ(numaOfPci(view, "0000:99:00.0", -1), -1);
}

TEST(HwlocHost, OneNodePlacesNothing) {
  Topology t;
  std::string why;
  const HwlocView view = readHwloc(t, HwlocSource{.synthetic = "pack:1 [numa] core:6 pu:1"}, why);
  ASSERT_EQ(why, "");
  EXPECT_EQ(t.logicalCpus, 6);
  EXPECT_EQ(t.cores, 6);
  EXPECT_EQ(t.numa.size(), 1u);
  EXPECT_TRUE(view.pciNuma.empty());
}

TEST(HwlocHost, SaysWhyItCouldNotReadAndLeavesTheTopologyAlone) {
  Topology t;
  t.logicalCpus = 3;
  std::string why;
  readHwloc(t, HwlocSource{.synthetic = "not a machine"}, why);
  EXPECT_NE(why.find("synthetic"), std::string::npos) << why;
  EXPECT_EQ(t.logicalCpus, 3);
  readHwloc(t, HwlocSource{.xml = "<topology>"}, why);
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(t.logicalCpus, 3);
}

TEST(HwlocHost, ThisHostAgreesWithTheKernel) {
  Topology t;
  std::string why;
  readHwloc(t, HwlocSource{}, why);
  // Some sandboxes hide what hwloc reads; braid then reads sysfs, which the topology tests cover.
  if (!why.empty()) GTEST_SKIP() << "hwloc cannot read this host: " << why;
  EXPECT_EQ(t.logicalCpus, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_GE(t.cores, 1);
  EXPECT_LE(t.cores, t.logicalCpus);
  EXPECT_GE(t.numa.size(), 1u);
  EXPECT_NE(hwlocVersion().find("hwloc"), std::string::npos);
}

}  // namespace
}  // namespace braid::topology
