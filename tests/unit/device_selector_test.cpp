// The device path's choices are data (tuning/device_selector): which allreduce kernel by size, ranks and link,
// what BRAID_ALGO forces on which path, and how many blocks a kernel gets.
#include "tuning/device_selector.hpp"

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

TEST(DeviceSelector, TwoGpusTakeLLUpTo512KiBThenOneShot) {
  const Settings s;
  EXPECT_EQ(chooseDeviceAllreduce(8, 2, true, true, s).algorithm, DeviceAlgorithm::kLL);
  EXPECT_EQ(chooseDeviceAllreduce(512 * 1024, 2, true, true, s).algorithm, DeviceAlgorithm::kLL);
  EXPECT_EQ(chooseDeviceAllreduce(512 * 1024 + 1, 2, true, true, s).algorithm, DeviceAlgorithm::kOneShot);
  EXPECT_EQ(chooseDeviceAllreduce(32u << 20, 2, true, true, s).algorithm, DeviceAlgorithm::kOneShot);
  EXPECT_EQ(chooseDeviceAllreduce(std::size_t{1} << 30, 2, true, true, s).algorithm, DeviceAlgorithm::kOneShot);
  EXPECT_EQ(chooseDeviceAllreduce(std::size_t{1} << 30, 2, false, true, s).algorithm, DeviceAlgorithm::kOneShot);
  // More ranks: one-shot's (n-1)x traffic loses earlier, sooner over PCIe than over NVLink.
  EXPECT_EQ(chooseDeviceAllreduce(64 * 1024, 4, true, true, s).algorithm, DeviceAlgorithm::kLL);
  EXPECT_EQ(chooseDeviceAllreduce(256 * 1024, 4, true, true, s).algorithm, DeviceAlgorithm::kOneShot);
  EXPECT_EQ(chooseDeviceAllreduce(256 * 1024 + 1, 4, true, true, s).algorithm, DeviceAlgorithm::kTwoShot);
  EXPECT_EQ(chooseDeviceAllreduce(64 * 1024 + 1, 4, false, true, s).algorithm, DeviceAlgorithm::kTwoShot);
}

TEST(DeviceSelector, NoChannelMeansStagedWhateverWasAsked) {
  const auto c = chooseDeviceAllreduce(8, 2, true, false, withAlgo("oneshot"));
  EXPECT_EQ(c.algorithm, DeviceAlgorithm::kStaged);
  EXPECT_EQ(c.reason, DeviceReason::kNoChannel);
  EXPECT_NE(explainDeviceAllreduce(c, 8, 2, true).find("staged"), std::string::npos);
}

TEST(DeviceSelector, BraidAlgoForcesEachPathWithItsOwnNames) {
  EXPECT_EQ(chooseDeviceAllreduce(1u << 30, 2, true, true, withAlgo("oneshot")).algorithm, DeviceAlgorithm::kOneShot);
  EXPECT_EQ(chooseDeviceAllreduce(8, 2, true, true, withAlgo("twoshot")).algorithm, DeviceAlgorithm::kTwoShot);
  EXPECT_EQ(chooseDeviceAllreduce(8, 2, true, true, withAlgo("staged")).algorithm, DeviceAlgorithm::kStaged);
  // ll carries at most 512 KiB: larger messages forced to ll run one-shot.
  EXPECT_EQ(chooseDeviceAllreduce(512 * 1024, 2, true, true, withAlgo("ll")).algorithm, DeviceAlgorithm::kLL);
  EXPECT_EQ(chooseDeviceAllreduce(512 * 1024 + 1, 2, true, true, withAlgo("ll")).algorithm, DeviceAlgorithm::kOneShot);
  EXPECT_EQ(chooseDeviceAllreduce(8, 2, true, true, withAlgo("oneshot")).algorithm, DeviceAlgorithm::kOneShot);
  // One name per path: a host name leaves the device path to the table, and the other way round.
  EXPECT_EQ(chooseDeviceAllreduce(8, 2, true, true, withAlgo("rsag")).reason, DeviceReason::kTable);
  EXPECT_EQ(forcedAlgorithm(withAlgo("rsag,twoshot"), Path::kHost), "rsag");
  EXPECT_EQ(forcedAlgorithm(withAlgo("rsag,twoshot"), Path::kDevice), "twoshot");
}

Settings sharedGpu(const std::string& mode, const std::string& algo = "") {
  Settings s = withAlgo(algo);
  s.cudaSharedGpu = mode;
  return s;
}

TEST(DeviceSelector, RanksSharingAGpuTakeTheSharedPathUnlessMpsRunsOrKernelsAreAsked) {
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
  // Staging through the host stays possible for the allreduce; every size is shared otherwise.
  const auto staged = chooseDeviceAllreduce(8, 2, false, true, sharedGpu("auto", "staged"), true);
  EXPECT_EQ(staged.algorithm, DeviceAlgorithm::kStaged);
  for (std::size_t bytes : {std::size_t{8}, std::size_t{64} << 10, std::size_t{64} << 20}) {
    const auto c = chooseDeviceAllreduce(bytes, 2, false, true, sharedGpu("auto"), true);
    EXPECT_EQ(c.algorithm, DeviceAlgorithm::kShared) << bytes;
    EXPECT_EQ(c.reason, DeviceReason::kSharedGpu);
    EXPECT_NE(explainDeviceAllreduce(c, bytes, 2, false).find("share a GPU"), std::string::npos);
  }
  // Processes sharing a GPU stage up to 1 MiB (a kernel of theirs waits for a context switch); threads do not.
  EXPECT_EQ(chooseDeviceAllreduce(1 << 20, 2, false, true, sharedGpu("auto"), true, true).algorithm,
            DeviceAlgorithm::kStaged);
  EXPECT_EQ(chooseDeviceAllreduce((1 << 20) + 4, 2, false, true, sharedGpu("auto"), true, true).algorithm,
            DeviceAlgorithm::kShared);
  EXPECT_EQ(chooseDeviceAllreduce(8, 2, false, true, sharedGpu("auto"), true, false).algorithm,
            DeviceAlgorithm::kShared);
  EXPECT_EQ(chooseDeviceAllreduce(8, 2, false, true, withAlgo("shared")).algorithm, DeviceAlgorithm::kShared);
  EXPECT_EQ(chooseDeviceAllreduce(8, 2, false, true, withAlgo("shared"), true, true).algorithm,
            DeviceAlgorithm::kShared);
  EXPECT_EQ(chooseDeviceAllreduce(8, 2, false, false, withAlgo("shared")).algorithm, DeviceAlgorithm::kStaged);
  try {
    chooseSharedGpuPath(true, false, sharedGpu("mps"));
    FAIL() << "BRAID_CUDA_SHARED_GPU=mps was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("BRAID_CUDA_SHARED_GPU='mps'"), std::string::npos) << e.what();
  }
}

TEST(DeviceSelector, AnUnknownAlgorithmNameIsRefusedByName) {
  try {
    forcedAlgorithm(withAlgo("direct,threeshot"), Path::kDevice);
    FAIL() << "threeshot was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'threeshot' is not an algorithm"), std::string::npos) << e.what();
  }
}

TEST(DeviceSelector, BlocksGrowWithTheWindowUpTo128OrTheKnob) {
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

TEST(DeviceSelector, TunedBoundsReplaceTheTable) {
  Settings s;
  s.cudaLlMaxBytes = 32 * 1024;
  s.cudaOneshotMaxBytes = 4u << 20;
  EXPECT_EQ(chooseDeviceAllreduce(32 * 1024, 2, true, true, s).algorithm, DeviceAlgorithm::kLL);
  EXPECT_EQ(chooseDeviceAllreduce(32 * 1024 + 1, 2, true, true, s).algorithm, DeviceAlgorithm::kOneShot);
  EXPECT_EQ(chooseDeviceAllreduce(4u << 20, 2, true, true, s).algorithm, DeviceAlgorithm::kOneShot);
  EXPECT_EQ(chooseDeviceAllreduce((4u << 20) + 1, 2, true, true, s).algorithm, DeviceAlgorithm::kTwoShot);
  s.cudaLlMaxBytes = std::size_t{1} << 30;  // more than the LL area holds: capped at 512 KiB
  EXPECT_EQ(chooseDeviceAllreduce((512 * 1024) + 1, 2, true, true, s).algorithm, DeviceAlgorithm::kOneShot);
}

}  // namespace
}  // namespace braid::tuning
