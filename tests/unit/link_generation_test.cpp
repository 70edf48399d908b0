// Which generation of link a GPU has, as the GPU links' cost model wants it: NVLink's by architecture, PCIe's from
// the link speed sysfs reads.
#include "topology/link_generation.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace braid::topology {
namespace {

TEST(LinkGeneration, EachArchitecturesNvlink) {
  EXPECT_EQ(nvlinkGeneration(7, 0), 2);   // V100
  EXPECT_EQ(nvlinkGeneration(7, 5), 0);   // Turing
  EXPECT_EQ(nvlinkGeneration(8, 0), 3);   // A100
  EXPECT_EQ(nvlinkGeneration(8, 9), 0);   // Ada
  EXPECT_EQ(nvlinkGeneration(9, 0), 4);   // H100, H200
  EXPECT_EQ(nvlinkGeneration(10, 0), 5);  // B200
  EXPECT_EQ(nvlinkGeneration(12, 0), 0);  // RTX 50
}

TEST(PciLink, EachTransferRateIsAGeneration) {
  EXPECT_EQ(pcieGenerationOfSpeed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(pcieGenerationOfSpeed("5.0 GT/s PCIe"), 2);
  EXPECT_EQ(pcieGenerationOfSpeed("8.0 GT/s PCIe"), 3);
  EXPECT_EQ(pcieGenerationOfSpeed("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(pcieGenerationOfSpeed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(pcieGenerationOfSpeed("64.0 GT/s PCIe"), 6);
  EXPECT_EQ(pcieGenerationOfSpeed("8 GT/s"), 3);  // older kernels say it without the bus
  for (const char* odd : {"Unknown", "", "12.0 GT/s PCIe", "16.0", "GT/s"}) {
    EXPECT_EQ(pcieGenerationOfSpeed(odd), 0) << odd;
  }
}

TEST(PciLink, ReadFromTheDevicesSysfsNode) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("braid-pci-" + std::to_string(::getpid()));
  const std::filesystem::path device = root / "sys/bus/pci/devices/0000:3b:00.0";
  std::filesystem::create_directories(device);
  std::ofstream(device / "current_link_speed") << "32.0 GT/s PCIe\n";
  EXPECT_EQ(pcieGeneration("0000:3b:00.0", root.string()), 5);
  EXPECT_EQ(pcieGeneration("0000:3c:00.0", root.string()), 0);  // no such device
  EXPECT_EQ(pcieGeneration("", root.string()), 0);
  EXPECT_EQ(pcieGeneration("../../../etc", root.string()), 0);  // a bus id never holds a path
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace braid::topology
