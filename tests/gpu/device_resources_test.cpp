// GPU memory comes back: communicators that ran collectives on device buffers, with a registered user
// buffer, made and destroyed in a loop, leave the GPU's free memory where it was. Each round's communicator holds a
// shared workspace (64 MiB by default) and maps its peer's, so a leak of either shows within a few rounds. Two
// ranks; one GPU is enough (both share it: the free memory seen is the sum of both ranks' holdings).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gpu/device_ranks.hpp"

namespace braid::gputest {
namespace {

std::size_t freeGpuBytes() {
  std::size_t free = 0, total = 0;
  cuda::checkCuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

TEST(DeviceResources, CommunicatorsMadeUsedAndDestroyedGiveTheirGpuMemoryBack) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpus(2, 1, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    const std::size_t count = 1 << 18;  // 1 MiB of floats: the kernels' path, not a latency special case
    DeviceBytes buf(count * sizeof(float));
    cuda::checkCuda(cudaMemsetAsync(buf.get(), 0, count * sizeof(float), s), "cudaMemset");
    // `held`: measured while the round's communicator still holds its memory (both ranks' at once).
    auto round = [&](std::size_t* held = nullptr) {
      auto sub = c.split(0, c.rank());
      const BufferRegistration reg = sub->registerBuffer(buf.get(), count * sizeof(float));
      sub->allreduce(buf.get(), buf.get(), count, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
      cuda::checkCuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      if (held) {
        c.barrier();
        *held = freeGpuBytes();
        c.barrier();
      }
      sub->deregisterBuffer(reg);
      sub.reset();
    };
    // One round first: what a process makes once (its context's pools, the kernels' modules) is in the baseline.
    round();
    c.barrier();  // both ranks share the GPU: measure only while neither holds a round's memory
    const std::size_t before = freeGpuBytes();
    c.barrier();
    constexpr int kRounds = 20;
    for (int i = 0; i < kRounds; ++i) round();
    c.barrier();
    const std::size_t after = freeGpuBytes();
    c.barrier();
    // The measurement must see what a communicator holds, or the check below could not fail.
    std::size_t held = 0;
    round(&held);
    if (held + (std::size_t{32} << 20) > before) {
      throw std::runtime_error("cudaMemGetInfo does not show a communicator's workspace (" +
                               std::to_string((before - std::min(before, held)) >> 20) + " MiB while held)");
    }
    // 8 MiB of slack: the driver's own bookkeeping moves in 2 MiB pages; one leaked workspace is 64 MiB.
    if (after + (std::size_t{8} << 20) < before) {
      throw std::runtime_error("GPU memory not given back: " + std::to_string((before - after) >> 20) +
                               " MiB fewer free after " + std::to_string(kRounds) + " communicators");
    }
  });
  EXPECT_EQ(testing::failures(results), "");
}

}  // namespace
}  // namespace braid::gputest
