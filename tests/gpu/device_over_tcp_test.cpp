// Device buffers between ranks that reach each other over TCP only (as ranks on different hosts do): allreduces
// travel the ring window by window, their copies from and to the GPU overlapped with the transfers and reduced by
// the GPU or the host, allgathers and reduce-scatters window by window too (reduced by the host), and
// broadcast and alltoall stage their whole buffers. Exact-sum inputs that every rank makes for every rank, so each
// computes the expected bits itself (gpu/reference_values.hpp), not through braid's host path. Two ranks need only
// one GPU: here the GPU does nothing but copies (and, with reduceOn "gpu", the windows' reductions).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/data_type.hpp"
#include "core/communicator_impl.hpp"
#include "gpu/device_ranks.hpp"
#include "gpu/gpu_test_support.hpp"
#include "gpu/reference_values.hpp"
#include "support/collective_cases.hpp"

namespace braid::gputest {
namespace {

using Bytes = std::vector<std::byte>;

Settings tcpDeviceSettings(std::size_t windowBytes, const std::string& reduceOn = "gpu") {
  Settings s = deviceSettings();
  s.transport = "tcp";
  s.directMaxBytes = 4096;  // the ring from 4 KiB up, so that small cases pipeline too
  s.netStagingWindowBytes = windowBytes;
  s.netStagingReduce = reduceOn;
  return s;
}

Bytes exactInput(int rank, DataType type, ReduceKind kind, std::size_t count) {
  Bytes in(count * dataTypeSize(type));
  std::mt19937_64 rng(static_cast<std::uint64_t>(rank) * 7919u + count);
  fillExact(in.data(), count, type, kind, rng);
  return in;
}

void allreduceCase(Communicator& c, cudaStream_t s, DataType type, ReduceKind kind, std::size_t count, bool inPlace) {
  const std::size_t bytes = count * dataTypeSize(type);
  std::vector<Bytes> inputs;
  std::vector<const std::byte*> ptrs;
  for (int r = 0; r < c.size(); ++r) inputs.push_back(exactInput(r, type, kind, count));
  for (const Bytes& b : inputs) ptrs.push_back(b.data());
  const Bytes& in = inputs[static_cast<std::size_t>(c.rank())];
  Bytes got(bytes);
  DeviceBytes d(bytes), o(bytes);
  upload(d.get(), in.data(), bytes, s);
  std::byte* out = inPlace ? d.get() : o.get();
  c.allreduce(d.get(), out, count, type, kind, {.stream = s});
  download(got.data(), out, bytes, s);
  ref::requireReduced(got.data(), count, ptrs, 0, type, kind, 1,
                      std::string("allreduce ") + dataTypeName(type) + " " + reduceKindName(kind) + " count " +
                          std::to_string(count) + (inPlace ? " in place" : ""));
}

// (window bytes, where windows reduce): 64 KiB windows put a 3 MiB call through ~48 of them, both slots reused many
// times over; 0 stages whole buffers.
class DeviceOverTcp : public ::testing::TestWithParam<std::tuple<std::size_t, std::string>> {};

TEST_P(DeviceOverTcp, AllreduceWindowByWindowMatchesTheReference) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto [window, reduceOn] = GetParam();
  const auto results = runOnGpus(2, 1, tcpDeviceSettings(window, reduceOn), [](Communicator& c, cudaStream_t s) {
    if (std::string(c.transportName()) != "tcp") throw std::runtime_error("BRAID_TRANSPORT=tcp gave no tcp");
    for (DataType type : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt64, DataType::kUint8}) {
      for (ReduceKind kind : {ReduceKind::kSum, ReduceKind::kMax, ReduceKind::kAvg}) {
        if (!supported(type, kind)) continue;  // the tests' own table
        for (std::size_t bytes : {std::size_t{100}, std::size_t{5000}, (std::size_t{3} << 20) + 24}) {
          const std::size_t count = bytes / dataTypeSize(type);
          allreduceCase(c, s, type, kind, count, false);
          allreduceCase(c, s, type, kind, count, true);
        }
      }
    }
  });
  EXPECT_EQ(testing::failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Windows, DeviceOverTcp,
                         ::testing::Values(std::tuple{std::size_t{64} << 10, std::string("gpu")},
                                           std::tuple{std::size_t{64} << 10, std::string("host")},
                                           std::tuple{std::size_t{16} << 20, std::string("gpu")},
                                           std::tuple{std::size_t{0}, std::string("gpu")}),
                         [](const auto& info) {
                           const std::size_t w = std::get<0>(info.param);
                           return w == 0 ? std::string("whole")
                                         : "w" + std::to_string(w >> 10) + "k_" + std::get<1>(info.param);
                         });

// The other collectives over TCP: allgather and reduce_scatter window by window (64 KiB windows put the 4 MiB call
// through ~32 of them with a piece of every rank's block in each; 16 MiB windows hold it whole; 0 stages whole
// buffers), out of place and in place; broadcast and alltoall stage whole buffers. Against both ranks' inputs.
class DeviceOverTcpMoves : public ::testing::TestWithParam<std::size_t> {};

TEST_P(DeviceOverTcpMoves, BroadcastAllgatherReduceScatterAlltoall) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpus(2, 1, tcpDeviceSettings(GetParam()), [](Communicator& c, cudaStream_t s) {
    for (const std::size_t count : {std::size_t{(1u << 20) + 5}, std::size_t{333}}) {
      const std::size_t n = 2;
      const auto me = static_cast<std::size_t>(c.rank());
      const Bytes in0 = exactInput(0, DataType::kFloat32, ReduceKind::kSum, count * n);
      const Bytes in1 = exactInput(1, DataType::kFloat32, ReduceKind::kSum, count * n);
      const Bytes& in = me == 0 ? in0 : in1;
      const std::vector<const std::byte*> both = {in0.data(), in1.data()};
      const std::size_t bytes = count * 4;
      const std::string where = " of " + std::to_string(count) + " floats";
      // allgather: both ranks' first blocks; alltoall: block `me` of both; broadcast from rank 1: its first block.
      Bytes gathered(in0.begin(), in0.begin() + static_cast<std::ptrdiff_t>(bytes));
      gathered.insert(gathered.end(), in1.begin(), in1.begin() + static_cast<std::ptrdiff_t>(bytes));
      Bytes exchanged(in0.begin() + static_cast<std::ptrdiff_t>(me * bytes),
                      in0.begin() + static_cast<std::ptrdiff_t>((me + 1) * bytes));
      exchanged.insert(exchanged.end(), in1.begin() + static_cast<std::ptrdiff_t>(me * bytes),
                       in1.begin() + static_cast<std::ptrdiff_t>((me + 1) * bytes));
      const Bytes broadcasted(in1.begin(), in1.begin() + static_cast<std::ptrdiff_t>(bytes));
      DeviceBytes d(bytes * n), o(bytes * n);
      Bytes want, got(bytes * n);
      upload(d.get(), in.data(), bytes * n, s);
      want = gathered;
      c.allgather(d.get(), o.get(), count, DataType::kFloat32, {.stream = s});
      download(got.data(), o.get(), bytes * n, s);
      requireSameBytes(got.data(), want.data(), bytes * n, 4, "allgather" + where);
      // In place: this rank's block already sits at its place in the output, the rest is poison.
      cuda::checkCuda(cudaMemsetAsync(o.get(), 0x5a, bytes * n, s), "cudaMemsetAsync(poison)");
      upload(o.get() + me * bytes, in.data(), bytes, s);
      c.allgather(o.get() + me * bytes, o.get(), count, DataType::kFloat32, {.stream = s});
      download(got.data(), o.get(), bytes * n, s);
      requireSameBytes(got.data(), want.data(), bytes * n, 4, "allgather in place" + where);
      c.reduceScatter(d.get(), o.get(), count, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
      download(got.data(), o.get(), bytes, s);
      ref::requireReduced(got.data(), count, both, me * count, DataType::kFloat32, ReduceKind::kSum, 1,
                          "reduce_scatter" + where);
      // In place: the result lands on this rank's block of the input.
      upload(o.get(), in.data(), bytes * n, s);
      c.reduceScatter(o.get(), o.get() + me * bytes, count, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
      download(got.data(), o.get() + me * bytes, bytes, s);
      ref::requireReduced(got.data(), count, both, me * count, DataType::kFloat32, ReduceKind::kSum, 1,
                          "reduce_scatter in place" + where);
      want = exchanged;
      c.alltoall(d.get(), o.get(), count, DataType::kFloat32, {.stream = s});
      download(got.data(), o.get(), bytes * n, s);
      requireSameBytes(got.data(), want.data(), bytes * n, 4, "alltoall" + where);
      c.broadcast(d.get(), count, DataType::kFloat32, 1, {.stream = s});
      download(got.data(), d.get(), bytes, s);
      requireSameBytes(got.data(), broadcasted.data(), bytes, 4, "broadcast" + where);
    }
  });
  EXPECT_EQ(testing::failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Windows, DeviceOverTcpMoves,
                         ::testing::Values(std::size_t{64} << 10, std::size_t{16} << 20, std::size_t{0}),
                         [](const auto& info) {
                           return info.param == 0 ? std::string("whole") : "w" + std::to_string(info.param >> 10) + "k";
                         });

// A call staged through host memory cannot be captured (its host waits for the GPU between steps): refused by name
// before anything is queued or sent, on every rank alike, and the next call works. Small results of ranks that share
// the GPU (learned at creation) go back by value writes: the 8-byte case covers that route.
TEST(DeviceOverTcpCapture, IsRefusedByNameAndTheCommunicatorGoesOn) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpus(2, 1, tcpDeviceSettings(std::size_t{64} << 10), [](Communicator& c, cudaStream_t s) {
    for (const std::size_t n : {std::size_t{2}, std::size_t{1000}}) {
      // Small integers: every sum is exact in float32, whatever the order.
      std::vector<float> in(n), want(n, 0);
      for (std::size_t i = 0; i < n; ++i) {
        in[i] = static_cast<float>(i % 97 + static_cast<std::size_t>(c.rank()));
        for (int r = 0; r < c.size(); ++r) want[i] += static_cast<float>(i % 97 + static_cast<std::size_t>(r));
      }
      DeviceBytes buf(n * 4);
      upload(buf.get(), in.data(), n * 4, s);
      const std::string refused = refusedUnderCapture(
          s, [&] { c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s}); });
      testing::require(refused.find("CUDA graph") != std::string::npos && refused.find("staged") != std::string::npos,
                       "a capture of a staged call was not refused by name: " + refused);
      c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
      std::vector<float> got(n);
      download(got.data(), buf.get(), n * 4, s);
      requireSameBytes(got.data(), want.data(), n * 4, 4,
                       "after the refused capture, " + std::to_string(n) + " floats");
    }
  });
  EXPECT_EQ(testing::failures(results), "");
}

}  // namespace
}  // namespace braid::gputest
