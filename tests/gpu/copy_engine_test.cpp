// Results copied into device memory by a copy engine (cuda/runtime/copy_engine.hpp): every byte lands, nothing
// around it changes, the copy follows the stream's earlier work, and where the batch call cannot be used (the
// legacy default stream, a stream being captured) nothing is queued and a capture goes on unharmed.
#include "cuda/runtime/copy_engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/runtime/cuda_check.hpp"
#include "gpu/device_ranks.hpp"

namespace braid::gputest {
namespace {

using cuda::checkCuda;

constexpr std::size_t kGuard = 64;

TEST(CopyEngine, EveryByteLandsAfterTheStreamsEarlierWork) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  cudaStream_t s = nullptr;
  checkCuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  const std::size_t most = std::size_t{1} << 20;
  const std::size_t span = most + 2 * kGuard;
  DeviceBytes device(span);
  std::byte* pinned = nullptr;
  checkCuda(cudaHostAlloc(reinterpret_cast<void**>(&pinned), most, cudaHostAllocDefault), "cudaHostAlloc");
  for (std::size_t bytes : {std::size_t{1}, std::size_t{8}, std::size_t{1000}, std::size_t{16384}, most}) {
    const std::string what = std::to_string(bytes) + " bytes";
    // The guard pattern goes in by a copy on the same stream: the engine's copy must follow it.
    const std::vector<std::byte> before = bytePattern(span, 3);
    checkCuda(cudaMemcpyAsync(device.get(), before.data(), span, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    const std::vector<std::byte> data = bytePattern(bytes, static_cast<std::uint8_t>(bytes));
    std::copy(data.begin(), data.end(), pinned);
    ASSERT_TRUE(cuda::copyOnCopyEngine(device.get() + kGuard + 1, pinned, bytes, s)) << what;
    std::vector<std::byte> got(span);
    checkCuda(cudaMemcpyAsync(got.data(), device.get(), span, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
    checkCuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    std::vector<std::byte> want = before;
    std::copy(data.begin(), data.end(), want.begin() + static_cast<std::ptrdiff_t>(kGuard + 1));
    ASSERT_NO_THROW(requireSameBytes(got.data(), want.data(), span, 1, what));
  }
  (void)cudaFreeHost(pinned);
  (void)cudaStreamDestroy(s);
}

TEST(CopyEngine, TheDefaultStreamAndACaptureAreLeftAlone) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  DeviceBytes device(64);
  std::vector<std::byte> host(64, std::byte{5});
  EXPECT_FALSE(cuda::copyOnCopyEngine(device.get(), host.data(), 64, nullptr));
  EXPECT_FALSE(cuda::copyOnCopyEngine(device.get(), host.data(), 64, cudaStreamLegacy));
  cudaStream_t s = nullptr;
  checkCuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  checkCuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  EXPECT_FALSE(cuda::copyOnCopyEngine(device.get(), host.data(), 64, s));
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess) << "the capture was broken";
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaStreamDestroy(s);
}

}  // namespace
}  // namespace braid::gputest
