// The device engine's choices that are not between algorithms (tuning/device_path): whether ranks sharing a GPU
// take the shared-GPU path, what BRAID_ALGO names on which path, and how many blocks a kernel gets.
#include "tuning/device_path.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "tuning/selector.hpp"

namespace braid::tuning {
namespace {

Settings withAlgo(const std::string& algo) {
  Settings s;
  s.algo = algo;
  s.directMaxBytes = 64 * 1024;
  return s;
}

Settings sharedGpu(const std::string& mode, const std::string& algo = "") {
  Settings s = withAlgo(algo);
  s.cudaSharedGpu = mode;
  return s;
}

TEST(DevicePath, RanksSharingAGpuTakeTheSharedPathUnlessMpsRunsOrKernelsAreAsked) {
  // auto: the shared path where ranks share a GPU and no MPS server lets their kernels run side by side.
  EXPECT_TRUE(chooseSharedGpuPath(true, false, sharedGpu("auto")));
  EXPECT_FALSE(chooseSharedGpuPath(true, true, sharedGpu("auto")));
  EXPECT_FALSE(chooseSharedGpuPath(false, false, sharedGpu("auto")));
  EXPECT_TRUE(chooseSharedGpuPath(true, true, sharedGpu("shared")));
  EXPECT_FALSE(chooseSharedGpuPath(false, false, sharedGpu("shared")));
  EXPECT_FALSE(chooseSharedGpuPath(true, false, sharedGpu("kernels")));
  // BRAID_ALGO wins: a kernel named there runs even on a shared GPU; "shared" takes the path even without one.
  EXPECT_FALSE(chooseSharedGpuPath(true, false, sharedGpu("auto", "oneshot")));
  EXPECT_FALSE(chooseSharedGpuPath(true, false, sharedGpu("auto", "ll")));
  EXPECT_TRUE(chooseSharedGpuPath(false, false, sharedGpu("kernels", "shared")));
  try {
    chooseSharedGpuPath(true, false, sharedGpu("mps"));
    FAIL() << "BRAID_CUDA_SHARED_GPU=mps was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("BRAID_CUDA_SHARED_GPU='mps'"), std::string::npos) << e.what();
  }
}

TEST(DevicePath, AnUnknownAlgorithmNameIsRefusedByName) {
  try {
    forcedAlgorithm(withAlgo("direct,threeshot"), Path::kDevice);
    FAIL() << "threeshot was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'threeshot' is not an algorithm"), std::string::npos) << e.what();
  }
}

TEST(DevicePath, BlocksGrowWithTheWindowUpTo128OrTheKnob) {
  const Settings s;
  EXPECT_EQ(deviceBlocks(8, 128, s), 1);
  EXPECT_EQ(deviceBlocks(16 * 1024, 128, s), 1);
  EXPECT_EQ(deviceBlocks(16 * 1024 + 1, 128, s), 2);
  EXPECT_EQ(deviceBlocks(1u << 20, 128, s), 64);
  EXPECT_EQ(deviceBlocks(64u << 20, 128, s), 128);
  EXPECT_EQ(deviceBlocks(64u << 20, 16, s), 16);
  Settings forced;
  forced.cudaBlocks = 8;
  EXPECT_EQ(deviceBlocks(8, 64, forced), 8);
  forced.cudaBlocks = 500;
  EXPECT_EQ(deviceBlocks(8, 64, forced), 64);
}

}  // namespace
}  // namespace braid::tuning
