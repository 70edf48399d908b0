// Registered buffers (Communicator::registerBuffer): calls whose buffers are registered on every rank read
// their peers' buffers where they lie. Their results are checked exactly, the kernels' own count says they took
// that path (a test of results alone would pass on the inbox path too), and a call whose buffers are registered on
// some ranks only falls back on all of them. Ranks as processes (cudaIpc handles, cuMem fds) and as threads; with
// one GPU every rank shares it.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/device/device_engine.hpp"
#include "core/communicator_impl.hpp"
#include "cuda/runtime/device_reduce.hpp"
#include "cuda/runtime/vmm_allocation.hpp"
#include "gpu/device_ranks.hpp"
#include "support/collective_cases.hpp"
#include "support/internals.hpp"

namespace braid::gputest {
namespace {

using testing::require;

std::vector<float> ramp(std::size_t n, int rank, std::size_t from = 0) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(((from + i) % 89) + 3 * rank);
  return v;
}

std::vector<float> rampSum(std::size_t n, int ranks, std::size_t from = 0) {
  std::vector<float> v(n, 0);
  for (int r = 0; r < ranks; ++r) {
    const auto part = ramp(n, r, from);
    for (std::size_t i = 0; i < n; ++i) v[i] += part[i];
  }
  return v;
}

const device::DeviceEngine* engineOf(Communicator& c) {
  return dynamic_cast<const device::DeviceEngine*>(test::implOf(c).deviceEngine());
}

std::uint64_t registeredCalls(Communicator& c) {
  const auto* engine = engineOf(c);
  return engine != nullptr ? engine->registeredCalls() : 0;
}

// Calls that read the peers' buffers in place: the kernels' count of registered calls, or where thread ranks share
// one GPU, the shared-GPU path's count (every call there reads in place, registered or not).
std::uint64_t inPlaceCalls(Communicator& c) {
  const auto* engine = engineOf(c);
  return engine != nullptr ? engine->registeredCalls() + engine->oneContextCalls() : 0;
}

bool everyCallInPlace(Communicator& c) {
  const auto* engine = engineOf(c);
  return engine != nullptr && engine->oneContextCalls() != 0;
}

// Registration below the default minimum too, and the one-shot kernel (not LL) for every allreduce size.
Settings registeredSettings() {
  Settings s = deviceSettings("oneshot");
  s.cudaRegisteredMinBytes = 0;
  return s;
}

void expectFloats(const void* device, const std::vector<float>& want, cudaStream_t s, const std::string& what) {
  std::vector<float> got(want.size());
  download(got.data(), device, want.size() * 4, s);
  requireSameBytes(got.data(), want.data(), want.size() * 4, 4, what);
}

// Allreduce (out of place and in place), reduce_scatter and allgather (out of place and in place) on buffers that
// are registered on every rank, exactly; then a call on unregistered memory, which takes the inboxes.
void collectivesOnRegisteredBuffers(Communicator& c, cudaStream_t s, std::byte* send, std::byte* recv,
                                    std::size_t count, const std::string& what) {
  const int n = c.size();
  const int me = c.rank();
  const CallOptions on{.stream = s};
  const std::uint64_t before = inPlaceCalls(c);
  const std::string at = what + ", count " + std::to_string(count);
  std::uint64_t calls = 0;
  // After each call: it read the peers' buffers in place (the count went up by one).
  auto readInPlace = [&](const std::string& call) {
    const std::uint64_t read = inPlaceCalls(c) - before;
    ++calls;
    require(read == calls, at + ": " + call + " did not read the peers' registered buffers in place (" +
                               std::to_string(read) + " of " + std::to_string(calls) + " calls did)");
  };

  upload(send, ramp(count, me).data(), count * 4, s);
  c.allreduce(send, recv, count, DataType::kFloat32, ReduceKind::kSum, on);
  expectFloats(recv, rampSum(count, n), s, at + ": allreduce");
  readInPlace("allreduce");
  upload(recv, ramp(count, me).data(), count * 4, s);
  c.allreduce(recv, recv, count, DataType::kFloat32, ReduceKind::kSum, on);
  expectFloats(recv, rampSum(count, n), s, at + ": allreduce in place");
  readInPlace("allreduce in place");

  const std::size_t all = count * static_cast<std::size_t>(n);
  upload(send, ramp(all, me).data(), all * 4, s);
  c.reduceScatter(send, recv, count, DataType::kFloat32, ReduceKind::kSum, on);
  expectFloats(recv, rampSum(count, n, count * static_cast<std::size_t>(me)), s, at + ": reduce_scatter");
  readInPlace("reduce_scatter");

  std::vector<float> gathered;
  for (int q = 0; q < n; ++q) {
    const auto part = ramp(count, q);
    gathered.insert(gathered.end(), part.begin(), part.end());
  }
  upload(send, ramp(count, me).data(), count * 4, s);
  c.allgather(send, recv, count, DataType::kFloat32, on);
  expectFloats(recv, gathered, s, at + ": allgather");
  readInPlace("allgather");
  std::byte* mine = recv + static_cast<std::size_t>(me) * count * 4;
  cuda::checkCuda(cudaMemsetAsync(recv, 0xff, all * 4, s), "cudaMemsetAsync");
  upload(mine, ramp(count, me).data(), count * 4, s);
  c.allgather(mine, recv, count, DataType::kFloat32, on);
  expectFloats(recv, gathered, s, at + ": allgather in place");
  readInPlace("allgather in place");

  DeviceBytes other(count * 4);
  upload(other.get(), ramp(count, me).data(), count * 4, s);
  c.allreduce(other.get(), other.get(), count, DataType::kFloat32, ReduceKind::kSum, on);
  expectFloats(other.get(), rampSum(count, n), s, at + ": allreduce on unregistered memory");
  if (!everyCallInPlace(c)) {
    require(inPlaceCalls(c) - before == calls, at + ": a call on unregistered memory read registered buffers");
  }
}

void registeredCudaMalloc(Communicator& c, cudaStream_t s, const std::string& what) {
  const auto n = static_cast<std::size_t>(c.size());
  for (std::size_t count : {std::size_t{1}, std::size_t{1027}, std::size_t{262147}, (std::size_t{1} << 22) + 3}) {
    DeviceBytes send(count * 4 * n);
    DeviceBytes recv(count * 4 * n);
    const BufferRegistration rs = c.registerBuffer(send.get(), count * 4 * n, {.stream = s});
    const BufferRegistration rr = c.registerBuffer(recv.get(), count * 4 * n, {.stream = s});
    require(rs.id != 0 && rr.id != 0 && rs.id != rr.id, what + ": registrations got ids");
    collectivesOnRegisteredBuffers(c, s, send.get(), recv.get(), count, what);
    c.deregisterBuffer(rr, {.stream = s});
    c.deregisterBuffer(rs, {.stream = s});
    // Deregistered: the same buffers take the inboxes again.
    const std::uint64_t before = registeredCalls(c);
    upload(send.get(), ramp(count, c.rank()).data(), count * 4, s);
    c.allreduce(send.get(), recv.get(), count, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    expectFloats(recv.get(), rampSum(count, c.size()), s, what + ": after deregistering");
    require(registeredCalls(c) == before, what + ": a deregistered buffer was still read in place by the kernels");
  }
}

TEST(RegisteredBuffers, CudaMallocBuffersAreReadInPlaceByProcessRanks) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  for (int ranks : {2, 4}) {
    const auto results = runOnGpus(ranks, 1, registeredSettings(), [&](Communicator& c, cudaStream_t s) {
      registeredCudaMalloc(c, s, std::to_string(ranks) + " processes");
    });
    EXPECT_EQ(testing::failures(results), "") << ranks << " ranks";
  }
}

// Thread ranks, rank r on GPU r % GPUs. On one GPU they take the shared-GPU path of one context, which reads every
// rank's buffers in place (registered or not) with no kernel waiting for another; on several GPUs the one-shot
// kernel reads the registered buffers. Each is checked by its own count.
TEST(RegisteredBuffers, ThreadRanksUseEachOthersPointers) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const int gpus = cuda::deviceCount();
  Settings settings = gpus == 1 ? deviceSettings() : registeredSettings();
  settings.cudaRegisteredMinBytes = 0;
  settings.timeoutSeconds = 30;
  const auto results = testing::runThreads(
      2,
      [&](Communicator& c) {
        cuda::checkCuda(cudaSetDevice(c.rank() % gpus), "cudaSetDevice");
        cudaStream_t s = nullptr;
        cuda::checkCuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
        registeredCudaMalloc(c, s, gpus == 1 ? "threads sharing a GPU" : "threads");
        if (gpus == 1) require(everyCallInPlace(c), "thread ranks sharing a GPU did not take the one-context path");
        (void)cudaStreamDestroy(s);
      },
      settings);
  EXPECT_EQ(testing::failures(results), "");
}

// cuMem memory made exportable as a POSIX fd (as torch's expandable segments are) travels as an fd.
TEST(RegisteredBuffers, CuMemBuffersTravelAsFileDescriptors) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpus(2, 1, registeredSettings(), [](Communicator& c, cudaStream_t s) {
    int device = 0;
    cuda::checkCuda(cudaGetDevice(&device), "cudaGetDevice");
    const std::size_t count = (std::size_t{1} << 20) + 5;
    const cuda::VmmAllocation memory = cuda::VmmAllocation::create(2 * 2 * count * 4 + 4096, device);
    auto* send = static_cast<std::byte*>(memory.data());
    std::byte* recv = send + 2 * count * 4 + 4096;  // two registrations inside one allocation, mapped once
    const BufferRegistration rs = c.registerBuffer(send, 2 * count * 4, {.stream = s});
    const BufferRegistration rr = c.registerBuffer(recv, 2 * count * 4, {.stream = s});
    collectivesOnRegisteredBuffers(c, s, send, recv, count, "cuMem");
    c.deregisterBuffer(rs, {.stream = s});
    c.deregisterBuffer(rr, {.stream = s});
  });
  EXPECT_EQ(testing::failures(results), "");
}

// Registered on rank 0 only: every rank falls back to the inboxes, and the result is still exact.
TEST(RegisteredBuffers, BuffersRegisteredOnSomeRanksOnlyTakeTheInboxesEverywhere) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpus(2, 1, registeredSettings(), [](Communicator& c, cudaStream_t s) {
    const std::size_t count = (std::size_t{1} << 20) + 1;
    DeviceBytes registered(count * 4);
    DeviceBytes plain(count * 4);
    const BufferRegistration r = c.registerBuffer(registered.get(), count * 4, {.stream = s});
    std::byte* buf = c.rank() == 0 ? registered.get() : plain.get();
    upload(buf, ramp(count, c.rank()).data(), count * 4, s);
    c.allreduce(buf, buf, count, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    expectFloats(buf, rampSum(count, c.size()), s, "registered on rank 0 only");
    require(registeredCalls(c) == 0, "a call read buffers in place that rank 1 had not registered");
    c.deregisterBuffer(r, {.stream = s});
  });
  EXPECT_EQ(testing::failures(results), "");
}

// Host memory, and a range past the end of its allocation, are refused on every rank with the reason.
TEST(RegisteredBuffers, WhatCannotBeRegisteredIsRefusedOnEveryRankByName) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpus(2, 1, registeredSettings(), [](Communicator& c, cudaStream_t s) {
    DeviceBytes device(1 << 20);
    std::vector<float> host(1 << 18);
    auto expectRefused = [&](void* ptr, std::size_t bytes, const std::string& mine, const std::string& what) {
      try {
        (void)c.registerBuffer(ptr, bytes, {.stream = s});
      } catch (const Error& e) {
        if (!mine.empty() && std::string(e.what()).find(mine) == std::string::npos) {
          throw std::runtime_error(what + ": the error does not say why: " + e.what());
        }
        return;
      }
      throw std::runtime_error(what + ": registered");
    };
    expectRefused(c.rank() == 0 ? static_cast<void*>(host.data()) : device.get(), 1 << 20,
                  c.rank() == 0 ? "only GPU memory can be registered" : "", "host memory on rank 0");
    expectRefused(device.get(), c.rank() == 1 ? (2 << 20) : (1 << 20), "rank 1", "past the allocation on rank 1");
    // The communicator goes on: a registration that fits works afterwards.
    const BufferRegistration r = c.registerBuffer(device.get(), 1 << 20, {.stream = s});
    require(r.id != 0, "a registration after refused ones");
    c.deregisterBuffer(r, {.stream = s});
  });
  EXPECT_EQ(testing::failures(results), "");
}

}  // namespace
}  // namespace braid::gputest
