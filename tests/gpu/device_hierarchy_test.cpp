// The hierarchical allreduce on device buffers: ranks laid out as two hosts of two by BRAID_HOST_ID, so
// that inside a "host" the reduce-scatter and allgather run on braid's GPU kernels (cuda_ipc) and between hosts the
// shards go around a TCP ring window by window. Exact inputs that every rank makes for all four, so each computes the
// expected bits itself (gpu/reference_values.hpp, not braid's host path); and across ranks on inputs that round. Four
// process ranks need only one GPU (they take turns on it).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/data_type.hpp"
#include "core/communicator_impl.hpp"
#include "gpu/device_ranks.hpp"
#include "gpu/gpu_test_support.hpp"
#include "gpu/reference_values.hpp"

namespace braid::gputest {
namespace {

using Bytes = std::vector<std::byte>;

Settings twoHostsOfTwo(int rank, std::size_t windowBytes) {
  Settings s = deviceSettings();
  s.transport = "auto";
  s.hostId = "h" + std::to_string(rank / 2);
  s.hierarchy = "on";
  s.netStagingWindowBytes = windowBytes;
  return s;
}

std::uint64_t hashOf(const Bytes& b) {
  std::uint64_t hash = 1469598103934665603ull;
  for (std::byte x : b) hash = (hash ^ static_cast<unsigned char>(x)) * 1099511628211ull;
  return hash;
}

void exactCase(Communicator& c, cudaStream_t s, DataType type, ReduceKind kind, std::size_t count, bool inPlace) {
  const std::size_t bytes = count * dataTypeSize(type);
  std::vector<Bytes> inputs;
  std::vector<const std::byte*> ptrs;
  for (int r = 0; r < c.size(); ++r) {
    Bytes in(bytes);
    std::mt19937_64 rng(static_cast<std::uint64_t>(r) * 7919u + count);
    fillExact(in.data(), count, type, kind, rng);
    inputs.push_back(std::move(in));
  }
  for (const Bytes& b : inputs) ptrs.push_back(b.data());
  const Bytes& in = inputs[static_cast<std::size_t>(c.rank())];
  Bytes got(bytes);
  DeviceBytes d(bytes), o(bytes);
  upload(d.get(), in.data(), bytes, s);
  std::byte* out = inPlace ? d.get() : o.get();
  c.allreduce(d.get(), out, count, type, kind, {.stream = s});
  download(got.data(), out, bytes, s);
  ref::requireReduced(got.data(), count, ptrs, 0, type, kind, 1,
                      std::string("hierarchical allreduce ") + dataTypeName(type) + " " + reduceKindName(kind) +
                          " count " + std::to_string(count) + (inPlace ? " in place" : ""));
}

class DeviceHierarchy : public ::testing::TestWithParam<std::size_t> {};

TEST_P(DeviceHierarchy, TwoHostsOfTwoMatchTheReferenceAndAgreeBitwise) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const std::size_t window = GetParam();
  const auto results = testing::runProcessesWith(
      4, [&](int r) { return twoHostsOfTwo(r, window); },
      [](Communicator& c) {
        const int gpus = gpusSeenByAChild();
        cuda::checkCuda(cudaSetDevice(c.rank() % gpus), "cudaSetDevice");
        cudaStream_t s = nullptr;
        cuda::checkCuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
        if (c.hostCount() != 2 || c.localSize() != 2) throw std::runtime_error("BRAID_HOST_ID gave no 2 x 2 layout");
        const std::string algorithm = c.allreduceAlgorithm(std::size_t{4} << 20);
        if (algorithm.rfind("hierarchical", 0) != 0) throw std::runtime_error("not hierarchical: " + algorithm);
        for (DataType type : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt64}) {
          for (ReduceKind kind : {ReduceKind::kSum, ReduceKind::kMax}) {
            for (std::size_t bytes : {std::size_t{8}, std::size_t{5000}, (std::size_t{3} << 20) + 24}) {
              const std::size_t count = bytes / dataTypeSize(type);
              exactCase(c, s, type, kind, count, false);
              exactCase(c, s, type, kind, count, true);
            }
          }
        }
        // Average does not compose (it would divide twice): the flat path over TCP takes it, still exact.
        exactCase(c, s, DataType::kFloat32, ReduceKind::kAvg, (std::size_t{1} << 20) + 1, false);
        // Inputs that round: each shard is reduced once, so every rank must hold the same bits.
        const std::size_t count = (std::size_t{1} << 20) + 3;
        std::vector<float> f(count);
        for (std::size_t i = 0; i < count; ++i) f[i] = 1.0f / static_cast<float>(i % 97 + c.rank() + 3);
        DeviceBytes d(count * 4);
        upload(d.get(), f.data(), count * 4, s);
        c.allreduce(d.get(), d.get(), count, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
        Bytes got(count * 4);
        download(got.data(), d.get(), count * 4, s);
        const std::uint64_t mine = hashOf(got);
        std::vector<std::uint64_t> all(4);
        c.allgather(&mine, all.data(), 1, DataType::kUint64);
        for (int r = 0; r < 4; ++r) {
          if (all[static_cast<std::size_t>(r)] != mine) {
            throw std::runtime_error("rank " + std::to_string(r) + "'s hierarchical allreduce differs in its bits");
          }
        }
        cuda::checkCuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        (void)cudaStreamDestroy(s);
      },
      400);
  EXPECT_EQ(testing::failures(results), "");
}

// 64 KiB windows put the 3 MiB case's shards through many windows; 16 MiB is the default.
INSTANTIATE_TEST_SUITE_P(Windows, DeviceHierarchy, ::testing::Values(std::size_t{64} << 10, std::size_t{16} << 20),
                         [](const auto& info) { return "w" + std::to_string(info.param >> 10) + "k"; });

}  // namespace
}  // namespace braid::gputest
