// The allreduce algorithms of GPU buffers describe themselves (algorithms/device/device_algorithms) and the same
// Selector weighs them: which can run follows from what the engine found, the cost model of the link chooses among
// braid's kernels, braid tune's bounds replace its crossovers, and BRAID_ALGO forces one.
#include "algorithms/device/device_algorithms.hpp"

#include <gtest/gtest.h>

#include "cuda/kernels/collective_kernels.hpp"
#include "tuning/selector.hpp"

namespace braid::device {
namespace {

using tuning::Algorithm, tuning::Selection, tuning::Selector;

constexpr DeviceFacts kKernels{.channel = true, .shared = false, .processes = false};

Settings withAlgo(const std::string& algo) {
  Settings s;
  s.algo = algo;
  return s;
}

Selector selector(int ranks, bool nvlink, const DeviceFacts& facts = kKernels, const Settings& settings = {}) {
  return Selector(
      allreduceAlgorithms(facts, settings),
      tuning::Machine{.ranks = ranks, .usableCpus = 0, .link = nvlink ? tuning::Link::kNvlink : tuning::Link::kPcie},
      settings, tuning::Path::kDevice);
}

Algorithm chosen(const Selector& s, std::size_t bytes) { return s.choose(bytes).algorithm->id; }

Selector ofGeneration(int ranks, int generation) {
  return Selector(
      allreduceAlgorithms(kKernels, {}),
      tuning::Machine{.ranks = ranks, .link = tuning::Link::kNvlink, .gpus = ranks, .linkGeneration = generation}, {},
      tuning::Path::kDevice);
}

// The largest power of two `id` is chosen for (0: none).
std::size_t upTo(const Selector& s, Algorithm id) {
  std::size_t last = 0;
  for (std::size_t b = 8; b <= (std::size_t{1} << 30); b *= 2) {
    if (chosen(s, b) == id) last = b;
  }
  return last;
}

TEST(DeviceAlgorithms, TwoGpusTakeLLUpToWhatItCarriesThenOneShot) {
  // Two ranks: one-shot and two-shot move the same bytes, one-shot with one synchronisation fewer; LL is cheaper
  // still until twice its bytes cost more than a synchronisation, past the 512 KiB the LL area holds on NVLink.
  const Selector nv = selector(2, true);
  EXPECT_EQ(chosen(nv, 8), Algorithm::kGpuLL);
  EXPECT_EQ(chosen(nv, cuda::kernels::kLlMaxBytes), Algorithm::kGpuLL);
  EXPECT_EQ(chosen(nv, cuda::kernels::kLlMaxBytes + 1), Algorithm::kGpuOneShot);
  EXPECT_EQ(chosen(nv, std::size_t{1} << 30), Algorithm::kGpuOneShot);
  EXPECT_EQ(nv.choose(8).why, Selection::Why::kModel);
  const Selector pcie = selector(2, false);
  EXPECT_EQ(chosen(pcie, 8), Algorithm::kGpuLL);
  EXPECT_EQ(chosen(pcie, std::size_t{1} << 30), Algorithm::kGpuOneShot);
  EXPECT_LE(upTo(pcie, Algorithm::kGpuLL), upTo(nv, Algorithm::kGpuLL));
}

TEST(DeviceAlgorithms, MoreGpusTurnToTwoShotSoonerOverPcie) {
  const Selector nv = selector(4, true);
  const Selector pcie = selector(4, false);
  EXPECT_EQ(chosen(nv, 8), Algorithm::kGpuLL);
  EXPECT_EQ(chosen(nv, std::size_t{1} << 30), Algorithm::kGpuTwoShot);
  EXPECT_EQ(chosen(pcie, std::size_t{1} << 30), Algorithm::kGpuTwoShot);
  // One-shot's (n-1)x traffic and LL's doubled bytes lose earlier with more ranks, and earlier over PCIe.
  EXPECT_LT(upTo(nv, Algorithm::kGpuLL), upTo(selector(2, true), Algorithm::kGpuLL));
  EXPECT_LT(upTo(selector(8, true), Algorithm::kGpuLL), upTo(nv, Algorithm::kGpuLL));
  const auto firstTwoShot = [](const Selector& s) {
    for (std::size_t b = 8; b <= (std::size_t{1} << 30); b *= 2) {
      if (chosen(s, b) == Algorithm::kGpuTwoShot) return b;
    }
    return std::size_t{0};
  };
  EXPECT_LT(firstTwoShot(pcie), firstTwoShot(nv));
  EXPECT_GT(firstTwoShot(pcie), 0u);
}

TEST(DeviceAlgorithms, TunedBoundsReplaceTheModelsCrossovers) {
  Settings s;
  s.cudaLlMaxBytes = 32 * 1024;
  s.cudaOneshotMaxBytes = 4u << 20;
  const Selector tuned = selector(2, true, kKernels, s);
  EXPECT_EQ(chosen(tuned, 32 * 1024), Algorithm::kGpuLL);
  EXPECT_EQ(chosen(tuned, 32 * 1024 + 1), Algorithm::kGpuOneShot);
  EXPECT_EQ(chosen(tuned, 4u << 20), Algorithm::kGpuOneShot);
  EXPECT_EQ(chosen(tuned, (4u << 20) + 1), Algorithm::kGpuTwoShot);  // the model alone would stay one-shot
  s.cudaLlMaxBytes = std::size_t{1} << 30;                           // more than the LL area holds: capped
  EXPECT_EQ(chosen(selector(2, true, kKernels, s), cuda::kernels::kLlMaxBytes + 1), Algorithm::kGpuOneShot);
}

TEST(DeviceAlgorithms, WithoutPeerAccessEveryCallIsStagedWhateverWasAsked) {
  const DeviceFacts none{.channel = false};
  EXPECT_EQ(chosen(selector(2, true, none, withAlgo("oneshot")), 8), Algorithm::kGpuStaged);
  EXPECT_EQ(chosen(selector(2, true, none), std::size_t{1} << 30), Algorithm::kGpuStaged);
  const std::string why = selector(2, true, none).explain(8);
  EXPECT_EQ(why.rfind("staged:", 0), 0u) << why;
  EXPECT_NE(why.find("staged (not modelled)"), std::string::npos) << why;
}

TEST(DeviceAlgorithms, BraidAlgoForcesEachPathWithItsOwnNames) {
  EXPECT_EQ(chosen(selector(2, true, kKernels, withAlgo("oneshot")), 1u << 30), Algorithm::kGpuOneShot);
  EXPECT_EQ(chosen(selector(2, true, kKernels, withAlgo("twoshot")), 8), Algorithm::kGpuTwoShot);
  EXPECT_EQ(chosen(selector(2, true, kKernels, withAlgo("staged")), 8), Algorithm::kGpuStaged);
  EXPECT_EQ(selector(2, true, kKernels, withAlgo("staged")).choose(8).why, Selection::Why::kForced);
  // LL carries at most what its area holds: larger messages forced to it take the model's next choice.
  const Selector ll = selector(2, true, kKernels, withAlgo("ll"));
  EXPECT_EQ(chosen(ll, cuda::kernels::kLlMaxBytes), Algorithm::kGpuLL);
  EXPECT_EQ(chosen(ll, cuda::kernels::kLlMaxBytes + 1), Algorithm::kGpuOneShot);
  // One name per path: a host name leaves the device path to the model, and the other way round.
  EXPECT_EQ(selector(2, true, kKernels, withAlgo("rsag")).choose(8).why, Selection::Why::kModel);
  EXPECT_EQ(tuning::forcedAlgorithm(withAlgo("rsag,twoshot"), tuning::Path::kHost), "rsag");
  EXPECT_EQ(tuning::forcedAlgorithm(withAlgo("rsag,twoshot"), tuning::Path::kDevice), "twoshot");
  // BRAID_DIRECT_MAX_BYTES is a host crossover: it moves nothing here.
  Settings direct;
  direct.directMaxBytes = 0;
  direct.givenKnobs = {"BRAID_DIRECT_MAX_BYTES"};
  EXPECT_EQ(chosen(selector(2, true, kKernels, direct), 8), Algorithm::kGpuLL);
}

TEST(DeviceAlgorithms, RanksSharingAGpuTakeTheSharedPathAndProcessesStageSmallCalls) {
  const DeviceFacts threads{.channel = true, .shared = true, .processes = false};
  const DeviceFacts processes{.channel = true, .shared = true, .processes = true};
  for (std::size_t bytes : {std::size_t{8}, std::size_t{64} << 10, std::size_t{64} << 20}) {
    EXPECT_EQ(chosen(selector(2, false, threads), bytes), Algorithm::kGpuShared) << bytes;
  }
  // A kernel of processes sharing a GPU waits for a context switch: up to 1 MiB they stage through the host.
  EXPECT_EQ(chosen(selector(2, false, processes), 1 << 20), Algorithm::kGpuStaged);
  EXPECT_EQ(chosen(selector(2, false, processes), (1 << 20) + 4), Algorithm::kGpuShared);
  EXPECT_EQ(chosen(selector(2, false, processes, withAlgo("staged")), 64 << 20), Algorithm::kGpuStaged);
  EXPECT_EQ(chosen(selector(2, false, processes, withAlgo("shared")), 8), Algorithm::kGpuShared);
  EXPECT_EQ(chosen(selector(2, false, threads, withAlgo("staged")), 8), Algorithm::kGpuStaged);
  const std::string why = selector(2, false, threads).explain(8);
  EXPECT_EQ(why.rfind("shared:", 0), 0u) << why;
  EXPECT_NE(why.find("share a GPU"), std::string::npos) << why;
}

TEST(DeviceAlgorithms, ASlowerNvlinkGenerationSendsSmallerMessagesOneShot) {
  // LL sends twice the bytes in one step, one-shot its bytes in two: the slower the link, the sooner the bytes cost
  // more than the step. NVLink 2 moves a third of NVLink 4's bytes per second.
  const std::size_t h200 = upTo(ofGeneration(2, 4), Algorithm::kGpuLL);
  const std::size_t v100 = upTo(ofGeneration(2, 2), Algorithm::kGpuLL);
  EXPECT_GT(v100, 0u);
  EXPECT_LT(v100, h200);
  EXPECT_EQ(upTo(ofGeneration(2, 0), Algorithm::kGpuLL), h200);  // unknown: priced as the measured generation
  const std::string why = ofGeneration(2, 3).explain(64 << 10);
  EXPECT_NE(why.find("generation 4 to 3"), std::string::npos) << why;
  EXPECT_NE(why.find("2 GPU(s)"), std::string::npos) << why;
}

}  // namespace
}  // namespace braid::device
