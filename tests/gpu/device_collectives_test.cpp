// Collectives on device buffers: every collective x type x op on 2 GPUs (and 4 ranks over 2 GPUs), in
// place and out of place, checked bit for bit against the same call on host buffers through the host path (whose
// own tests check it against exact references). Inputs are exact-sum values, so every fold order gives the same bits.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/data_type.hpp"
#include "gpu/device_ranks.hpp"
#include "gpu/gpu_test_support.hpp"

namespace braid::gputest {
namespace {

using Bytes = std::vector<std::byte>;

ReduceOp opOf(ReduceKind kind) { return kind == ReduceKind::kPremulSum ? ReduceOp::premulSum(2.0) : ReduceOp(kind); }

std::string caseName(const char* op, DataType type, ReduceKind kind, std::size_t count, bool inPlace) {
  return std::string(op) + " " + dataTypeName(type) + " " + reduceKindName(kind) + " count " + std::to_string(count) +
         (inPlace ? " in place" : "");
}

Bytes exactInput(int rank, DataType type, ReduceKind kind, std::size_t count, std::uint64_t salt) {
  Bytes in(count * dataTypeSize(type));
  std::mt19937_64 rng(salt * 1000003u + static_cast<std::uint64_t>(rank) * 7919u + count);
  fillExact(in.data(), count, type, kind, rng);
  return in;
}

// ---- the reducing collectives

void allreduceCase(Communicator& c, cudaStream_t s, DataType type, ReduceKind kind, std::size_t count, bool inPlace) {
  const std::size_t bytes = count * dataTypeSize(type);
  const Bytes in = exactInput(c.rank(), type, kind, count, 1);
  Bytes want(bytes), got(bytes);
  c.allreduce(in.data(), want.data(), count, type, opOf(kind));
  DeviceBytes d(bytes), o(bytes);
  upload(d.get(), in.data(), bytes, s);
  std::byte* out = inPlace ? d.get() : o.get();
  c.allreduce(d.get(), out, count, type, opOf(kind), {.stream = s});
  download(got.data(), out, bytes, s);
  requireSameBytes(got.data(), want.data(), bytes, dataTypeSize(type),
                   caseName("allreduce", type, kind, count, inPlace));
}

void reduceCase(Communicator& c, cudaStream_t s, DataType type, ReduceKind kind, std::size_t count, bool inPlace,
                int root) {
  const std::size_t bytes = count * dataTypeSize(type);
  const Bytes in = exactInput(c.rank(), type, kind, count, 2);
  Bytes want(bytes), got(bytes);
  c.reduce(in.data(), want.data(), count, type, opOf(kind), root);
  DeviceBytes d(bytes), o(bytes);
  upload(d.get(), in.data(), bytes, s);
  std::byte* out = inPlace ? d.get() : o.get();
  c.reduce(d.get(), out, count, type, opOf(kind), root, {.stream = s});
  if (c.rank() != root) return;
  download(got.data(), out, bytes, s);
  requireSameBytes(got.data(), want.data(), bytes, dataTypeSize(type), caseName("reduce", type, kind, count, inPlace));
}

void reduceScatterCase(Communicator& c, cudaStream_t s, DataType type, ReduceKind kind, std::size_t count,
                       bool inPlace) {
  const std::size_t elem = dataTypeSize(type);
  const std::size_t n = static_cast<std::size_t>(c.size());
  const Bytes in = exactInput(c.rank(), type, kind, count * n, 3);
  Bytes want(count * elem), got(count * elem);
  c.reduceScatter(in.data(), want.data(), count, type, opOf(kind));
  DeviceBytes d(count * n * elem), o(count * elem);
  upload(d.get(), in.data(), in.size(), s);
  std::byte* out = inPlace ? d.get() + static_cast<std::size_t>(c.rank()) * count * elem : o.get();
  c.reduceScatter(d.get(), out, count, type, opOf(kind), {.stream = s});
  download(got.data(), out, count * elem, s);
  requireSameBytes(got.data(), want.data(), count * elem, elem, caseName("reduce_scatter", type, kind, count, inPlace));
}

constexpr std::size_t kSmallCounts[] = {1, 7, 4096 / 4};
// 1 MiB + 3 bytes' worth of elements (odd counts: the kernels' lone-element tails run).
std::size_t megPlus3(DataType type) { return ((1u << 20) + 3) / dataTypeSize(type) | 1u; }

void everyTypeAndOp(const std::function<void(DataType, ReduceKind, std::size_t)>& each) {
  for (DataType type : kAllTypes) {
    for (ReduceKind kind : kindsOf(type)) {
      for (std::size_t count : kSmallCounts) each(type, kind, count);
      each(type, kind, megPlus3(type));
    }
  }
}

class DeviceReductions : public ::testing::TestWithParam<std::string> {};

// "oneshot_4k": one-shot with 4 KiB chunks, so that even 1 MiB pipelines through many flags per block.
Settings settingsFor(const std::string& param) {
  if (param == "oneshot_4k") {
    Settings s = deviceSettings("oneshot");
    s.cudaChunkBytes = 4096;
    return s;
  }
  return deviceSettings(param);
}

TEST_P(DeviceReductions, AllreduceEveryTypeOpAndSizeOn2Gpus) {
  BRAID_SKIP_WITHOUT_GPUS(2);
  const bool ll = GetParam() == "ll";
  const auto results = runOnGpus(2, 2, settingsFor(GetParam()), [ll](Communicator& c, cudaStream_t s) {
    everyTypeAndOp([&](DataType type, ReduceKind kind, std::size_t count) {
      for (bool inPlace : {false, true}) allreduceCase(c, s, type, kind, count, inPlace);
    });
    // LL's largest sizes: more lines than threads, so a thread carries several.
    if (ll) {
      for (DataType type : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt8, DataType::kFloat64}) {
        const std::size_t count = ((384u << 10) + 5) / dataTypeSize(type) | 1u;
        allreduceCase(c, s, type, ReduceKind::kSum, count, false);
        allreduceCase(c, s, type, ReduceKind::kMax, (512u << 10) / dataTypeSize(type), true);
      }
    }
  });
  EXPECT_EQ(testing::failures(results), "");
}

TEST_P(DeviceReductions, AllreduceOf64MiBOn2Gpus) {
  BRAID_SKIP_WITHOUT_GPUS(2);
  const auto results = runOnGpus(2, 2, settingsFor(GetParam()), [](Communicator& c, cudaStream_t s) {
    const std::size_t bytes = 64u << 20;
    for (DataType type : {DataType::kFloat32, DataType::kBFloat16}) {
      allreduceCase(c, s, type, ReduceKind::kSum, bytes / dataTypeSize(type), false);
    }
    allreduceCase(c, s, DataType::kInt32, ReduceKind::kMax, (bytes + 12) / 4, true);
  });
  EXPECT_EQ(testing::failures(results), "");
}

TEST_P(DeviceReductions, AllreduceOn4RanksOver2Gpus) {
  BRAID_SKIP_WITHOUT_GPUS(2);
  const auto results = runOnGpus(4, 2, settingsFor(GetParam()), [](Communicator& c, cudaStream_t s) {
    for (DataType type : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt64}) {
      for (std::size_t count : {std::size_t{1}, std::size_t{7}, megPlus3(type), (std::size_t{16} << 20) + 3}) {
        for (bool inPlace : {false, true}) allreduceCase(c, s, type, ReduceKind::kSum, count, inPlace);
      }
    }
    allreduceCase(c, s, DataType::kFloat16, ReduceKind::kAvg, 4097, false);
    allreduceCase(c, s, DataType::kUint8, ReduceKind::kMin, 4097, true);
  });
  EXPECT_EQ(testing::failures(results), "");
}

// ll: the LL kernel up to its 64 KiB, one-shot above; staged: through host memory and the host path.
INSTANTIATE_TEST_SUITE_P(Algorithms, DeviceReductions,
                         ::testing::Values("ll", "oneshot", "oneshot_4k", "twoshot", "staged"),
                         [](const auto& info) { return info.param; });

TEST(DeviceCollectives, ReduceAndReduceScatterEveryTypeAndOpOn2Gpus) {
  BRAID_SKIP_WITHOUT_GPUS(2);
  const auto results = runOnGpus(2, 2, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    everyTypeAndOp([&](DataType type, ReduceKind kind, std::size_t count) {
      reduceCase(c, s, type, kind, count, false, 1);
      reduceCase(c, s, type, kind, count, true, 0);
      reduceScatterCase(c, s, type, kind, count, false);
      reduceScatterCase(c, s, type, kind, count, true);
    });
  });
  EXPECT_EQ(testing::failures(results), "");
}

// ---- the moving collectives: bytes, so a few element sizes suffice.

void movingCases(Communicator& c, cudaStream_t s, std::size_t count, DataType type, std::uint64_t salt) {
  const std::size_t elem = dataTypeSize(type);
  const std::size_t n = static_cast<std::size_t>(c.size());
  const std::size_t bytes = count * elem;
  const int me = c.rank();
  const Bytes mine = exactInput(me, type, ReduceKind::kBxor, count * n, salt);  // raw bits
  const std::string tag = std::string(dataTypeName(type)) + " count " + std::to_string(count);
  auto check = [&](const std::byte* deviceResult, const Bytes& want, const std::string& what) {
    Bytes got(want.size());
    download(got.data(), deviceResult, want.size(), s);
    requireSameBytes(got.data(), want.data(), want.size(), elem, what + " " + tag);
  };
  DeviceBytes dsend(bytes * n), drecv(bytes * n);
  for (bool inPlace : {false, true}) {
    const char* how = inPlace ? " in place" : "";
    // allgather: in place means send is this rank's block of recv.
    Bytes want(bytes * n);
    c.allgather(mine.data(), want.data(), count, type);
    upload(drecv.get() + me * bytes, mine.data(), bytes, s);
    upload(dsend.get(), mine.data(), bytes, s);
    c.allgather(inPlace ? drecv.get() + me * bytes : dsend.get(), drecv.get(), count, type, {.stream = s});
    check(drecv.get(), want, std::string("allgather") + how);
    // alltoall
    c.alltoall(mine.data(), want.data(), count, type);
    upload(dsend.get(), mine.data(), bytes * n, s);
    c.alltoall(dsend.get(), inPlace ? dsend.get() : drecv.get(), count, type, {.stream = s});
    check(inPlace ? dsend.get() : drecv.get(), want, std::string("alltoall") + how);
  }
  for (int root = 0; root < c.size(); root += c.size() - 1) {
    // broadcast (always in place)
    Bytes buf(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(bytes));
    c.broadcast(buf.data(), count, type, root);
    upload(dsend.get(), mine.data(), bytes, s);
    c.broadcast(dsend.get(), count, type, root, {.stream = s});
    check(dsend.get(), buf, "broadcast root " + std::to_string(root));
    // gather
    Bytes want(bytes * n);
    c.gather(mine.data(), want.data(), count, type, root);
    upload(dsend.get(), mine.data(), bytes, s);
    c.gather(dsend.get(), drecv.get(), count, type, root, {.stream = s});
    if (me == root) check(drecv.get(), want, "gather root " + std::to_string(root));
    // scatter
    Bytes part(bytes);
    c.scatter(mine.data(), part.data(), count, type, root);
    upload(dsend.get(), mine.data(), bytes * n, s);
    c.scatter(dsend.get(), drecv.get(), count, type, root, {.stream = s});
    check(drecv.get(), part, "scatter root " + std::to_string(root));
  }
}

constexpr std::size_t kMovingCounts[] = {1, 7, 1024, 262147};

TEST(DeviceCollectives, MovingCollectivesOn2Gpus) {
  BRAID_SKIP_WITHOUT_GPUS(2);
  const auto results = runOnGpus(2, 2, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    for (DataType type : {DataType::kUint8, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
      for (std::size_t count : kMovingCounts) movingCases(c, s, count, type, count);
    }
    movingCases(c, s, 16u << 20, DataType::kFloat32, 99);  // 64 MiB per rank
  });
  EXPECT_EQ(testing::failures(results), "");
}

TEST(DeviceCollectives, MovingCollectivesOn4RanksOver2Gpus) {
  BRAID_SKIP_WITHOUT_GPUS(2);
  const auto results = runOnGpus(4, 2, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    for (std::size_t count : kMovingCounts) movingCases(c, s, count, DataType::kFloat32, count);
    movingCases(c, s, (4u << 20) + 1, DataType::kUint8, 5);
  });
  EXPECT_EQ(testing::failures(results), "");
}

TEST(DeviceCollectives, VariableCountsAndPointToPointStageOn2Gpus) {
  BRAID_SKIP_WITHOUT_GPUS(2);
  const auto results = runOnGpus(2, 2, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    const int me = c.rank();
    const std::vector<std::size_t> counts = {3, 1000}, displs = {0, 5};
    const Bytes mine = exactInput(me, DataType::kInt32, ReduceKind::kBxor, counts[me], 7);
    Bytes want(1005 * 4), got(1005 * 4);
    c.allgatherv(mine.data(), counts[me], want.data(), counts, displs, DataType::kInt32);
    DeviceBytes dsend(mine.size()), drecv(want.size());
    upload(dsend.get(), mine.data(), mine.size(), s);
    cuda::checkCuda(cudaMemsetAsync(drecv.get(), 0, want.size(), s), "cudaMemsetAsync");
    c.allgatherv(dsend.get(), counts[me], drecv.get(), counts, displs, DataType::kInt32, {.stream = s});
    download(got.data(), drecv.get(), got.size(), s);
    requireSameBytes(got.data() + 20, want.data() + 20, 4000, 4, "allgatherv");
    requireSameBytes(got.data(), want.data(), 12, 4, "allgatherv");
    // send/recv: rank 0 sends 1 MiB to rank 1.
    const std::size_t n = 1u << 18;
    DeviceBytes buf(n * 4);
    const Bytes data = exactInput(0, DataType::kFloat32, ReduceKind::kSum, n, 8);
    if (me == 0) {
      upload(buf.get(), data.data(), data.size(), s);
      c.send(buf.get(), n, DataType::kFloat32, 1, 0, {.stream = s});
    } else {
      c.recv(buf.get(), n, DataType::kFloat32, 0, 0, {.stream = s});
      Bytes back(data.size());
      download(back.data(), buf.get(), back.size(), s);
      requireSameBytes(back.data(), data.data(), data.size(), 4, "send/recv");
    }
  });
  EXPECT_EQ(testing::failures(results), "");
}

}  // namespace
}  // namespace braid::gputest
