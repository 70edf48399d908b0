// Small results written into device memory by the stream's value writes (cuda/runtime/stream_writes.hpp): every
// byte of the range lands, nothing around it changes, they follow the stream's earlier work, and what cannot go
// word by word is refused with nothing queued (the caller then copies).
#include "cuda/runtime/stream_writes.hpp"

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

TEST(StreamWrites, EveryByteLandsAndNothingAroundItChanges) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  cudaStream_t s = nullptr;
  checkCuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  const std::size_t span = cuda::kStreamWriteMaxBytes + 2 * kGuard;
  DeviceBytes device(span);
  for (std::size_t offset : {std::size_t{0}, std::size_t{4}, std::size_t{8}, std::size_t{12}}) {
    for (std::size_t bytes : {std::size_t{4}, std::size_t{8}, std::size_t{12}, std::size_t{20}, std::size_t{100},
                              cuda::kStreamWriteMaxBytes - 4, cuda::kStreamWriteMaxBytes}) {
      const std::string what = std::to_string(bytes) + " bytes at offset " + std::to_string(offset);
      // The guard pattern goes in by a copy on the same stream: the writes must follow it.
      const std::vector<std::byte> before = bytePattern(span, 7);
      checkCuda(cudaMemcpyAsync(device.get(), before.data(), span, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
      std::vector<std::byte> data = bytePattern(bytes, static_cast<std::uint8_t>(bytes + offset));
      ASSERT_TRUE(cuda::writeByStreamOps(device.get() + kGuard + offset, data.data(), bytes, s)) << what;
      data.assign(bytes, std::byte{0});  // the source may change once the call returned
      std::vector<std::byte> got(span);
      checkCuda(cudaMemcpyAsync(got.data(), device.get(), span, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
      checkCuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      std::vector<std::byte> want = before;
      const std::vector<std::byte> written = bytePattern(bytes, static_cast<std::uint8_t>(bytes + offset));
      std::copy(written.begin(), written.end(), want.begin() + static_cast<std::ptrdiff_t>(kGuard + offset));
      ASSERT_NO_THROW(requireSameBytes(got.data(), want.data(), span, 1, what));
    }
  }
  (void)cudaStreamDestroy(s);
}

TEST(StreamWrites, WhatCannotGoWordByWordIsRefusedWithNothingQueued) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  cudaStream_t s = nullptr;
  checkCuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  DeviceBytes device(cuda::kStreamWriteMaxBytes + 64);
  checkCuda(cudaMemsetAsync(device.get(), 0, cuda::kStreamWriteMaxBytes + 64, s), "cudaMemsetAsync");
  const std::vector<std::byte> data = bytePattern(cuda::kStreamWriteMaxBytes + 8, 3);
  EXPECT_FALSE(cuda::writeByStreamOps(device.get() + 2, data.data(), 8, s)) << "a destination not 4-byte aligned";
  EXPECT_FALSE(cuda::writeByStreamOps(device.get(), data.data(), 6, s)) << "a size not a multiple of 4";
  EXPECT_FALSE(cuda::writeByStreamOps(device.get(), data.data(), cuda::kStreamWriteMaxBytes + 8, s)) << "too large";
  EXPECT_FALSE(cuda::writeByStreamOps(device.get(), data.data(), 0, s)) << "nothing";
  std::vector<std::byte> host(64);
  EXPECT_FALSE(cuda::writeByStreamOps(host.data(), data.data(), 8, s)) << "host memory";
  std::vector<std::byte> got(cuda::kStreamWriteMaxBytes + 64);
  checkCuda(cudaMemcpyAsync(got.data(), device.get(), got.size(), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  checkCuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  EXPECT_EQ(std::count(got.begin(), got.end(), std::byte{0}), static_cast<std::ptrdiff_t>(got.size()))
      << "a refused write changed device memory";
  (void)cudaStreamDestroy(s);
}

}  // namespace
}  // namespace braid::gputest
