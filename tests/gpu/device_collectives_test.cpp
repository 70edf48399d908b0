// Collectives on device buffers: every collective x type x op on 2 ranks (and on 3 and 4 ranks), in place and out of
// place, with rank r on GPU r % GPUs (on one GPU every rank shares it). Every rank makes every rank's inputs from
// (salt, rank, count), so each computes the expected result itself (gpu/reference_values.hpp: float64 and 64-bit
// integer arithmetic rounded once to the type), never through braid. Inputs are exact-sum values, so every fold
// order gives the same bits.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/data_type.hpp"
#include "gpu/device_ranks.hpp"
#include "gpu/gpu_test_support.hpp"
#include "gpu/reference_values.hpp"

namespace braid::gputest {
namespace {

using Bytes = std::vector<std::byte>;

constexpr double kPremulScale = 2.0;
ReduceOp opOf(ReduceKind kind) {
  return kind == ReduceKind::kPremulSum ? ReduceOp::premulSum(kPremulScale) : ReduceOp(kind);
}

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

// Every rank's input of a call, as each rank made it.
struct AllInputs {
  std::vector<Bytes> of;
  std::vector<const std::byte*> ptrs;
  AllInputs(int ranks, DataType type, ReduceKind kind, std::size_t count, std::uint64_t salt) {
    for (int r = 0; r < ranks; ++r) of.push_back(exactInput(r, type, kind, count, salt));
    for (const Bytes& b : of) ptrs.push_back(b.data());
  }
};

// ---- the reducing collectives

void allreduceCase(Communicator& c, cudaStream_t s, DataType type, ReduceKind kind, std::size_t count, bool inPlace) {
  const std::size_t bytes = count * dataTypeSize(type);
  const AllInputs all(c.size(), type, kind, count, 1);
  const Bytes& in = all.of[static_cast<std::size_t>(c.rank())];
  Bytes got(bytes);
  DeviceBytes d(bytes), o(bytes);
  upload(d.get(), in.data(), bytes, s);
  std::byte* out = inPlace ? d.get() : o.get();
  c.allreduce(d.get(), out, count, type, opOf(kind), on(s));
  download(got.data(), out, bytes, s);
  ref::requireReduced(got.data(), count, all.ptrs, 0, type, kind, kPremulScale,
                      caseName("allreduce", type, kind, count, inPlace));
}

void reduceCase(Communicator& c, cudaStream_t s, DataType type, ReduceKind kind, std::size_t count, bool inPlace,
                int root) {
  const std::size_t bytes = count * dataTypeSize(type);
  const AllInputs all(c.size(), type, kind, count, 2);
  const Bytes& in = all.of[static_cast<std::size_t>(c.rank())];
  Bytes got(bytes);
  DeviceBytes d(bytes), o(bytes);
  upload(d.get(), in.data(), bytes, s);
  std::byte* out = inPlace ? d.get() : o.get();
  c.reduce(d.get(), out, count, type, opOf(kind), root, on(s));
  if (c.rank() != root) return;
  download(got.data(), out, bytes, s);
  ref::requireReduced(got.data(), count, all.ptrs, 0, type, kind, kPremulScale,
                      caseName("reduce", type, kind, count, inPlace));
}

void reduceScatterCase(Communicator& c, cudaStream_t s, DataType type, ReduceKind kind, std::size_t count,
                       bool inPlace) {
  const std::size_t elem = dataTypeSize(type);
  const std::size_t n = static_cast<std::size_t>(c.size());
  const AllInputs all(c.size(), type, kind, count * n, 3);
  const Bytes& in = all.of[static_cast<std::size_t>(c.rank())];
  Bytes got(count * elem);
  DeviceBytes d(count * n * elem), o(count * elem);
  upload(d.get(), in.data(), in.size(), s);
  std::byte* out = inPlace ? d.get() + static_cast<std::size_t>(c.rank()) * count * elem : o.get();
  c.reduceScatter(d.get(), out, count, type, opOf(kind), on(s));
  download(got.data(), out, count * elem, s);
  ref::requireReduced(got.data(), count, all.ptrs, static_cast<std::size_t>(c.rank()) * count, type, kind, kPremulScale,
                      caseName("reduce_scatter", type, kind, count, inPlace));
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

// "oneshot_4k": one-shot with 4 KiB chunks, so that even 1 MiB pipelines through many flags per block; "threads":
// ranks as threads of one process with the path braid chooses for them.
Settings settingsFor(const std::string& param) {
  if (param == "threads") return deviceSettings();
  if (param == "pooled") {
    Settings s = deviceSettings("shared");
    // Forked ranks inherit it: pooled buffers cannot be lent, so processes on one GPU take the leader path's
    // fallback, which publishes pieces in the workspaces.
    pooledDeviceBytes() = true;
    return s;
  }
  if (param == "detached") {
    // Every collective on a path whose host takes part, each run apart from its caller (the NCCL library's calls).
    Settings s = deviceSettings("shared");
    detachedCalls() = true;
    return s;
  }
  if (param == "oneshot_4k") {
    Settings s = deviceSettings("oneshot");
    s.cudaChunkBytes = 4096;
    return s;
  }
  return deviceSettings(param);
}

TEST_P(DeviceReductions, AllreduceEveryTypeOpAndSizeOn2Ranks) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const bool ll = GetParam() == "ll";
  const auto results = runOnRanks(GetParam(), 2, settingsFor(GetParam()), [ll](Communicator& c, cudaStream_t s) {
    everyTypeAndOp([&](DataType type, ReduceKind kind, std::size_t count) {
      for (bool inPlace : {false, true}) allreduceCase(c, s, type, kind, count, inPlace);
    });
    // LL's largest sizes: more lines than threads, so a thread carries several.
    if (ll) {
      for (DataType type :
           {DataType::kFloat32, DataType::kBFloat16, DataType::kInt8, DataType::kFloat64, DataType::kFloat8E4M3}) {
        const std::size_t count = ((384u << 10) + 5) / dataTypeSize(type) | 1u;
        allreduceCase(c, s, type, ReduceKind::kSum, count, false);
        allreduceCase(c, s, type, ReduceKind::kMax, (512u << 10) / dataTypeSize(type), true);
      }
    }
  });
  EXPECT_EQ(testing::failures(results), "");
}

TEST_P(DeviceReductions, AllreduceOf64MiBOn2Ranks) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnRanks(GetParam(), 2, settingsFor(GetParam()), [](Communicator& c, cudaStream_t s) {
    const std::size_t bytes = 64u << 20;
    for (DataType type : {DataType::kFloat32, DataType::kBFloat16}) {
      allreduceCase(c, s, type, ReduceKind::kSum, bytes / dataTypeSize(type), false);
    }
    allreduceCase(c, s, DataType::kInt32, ReduceKind::kMax, (bytes + 12) / 4, true);
  });
  EXPECT_EQ(testing::failures(results), "");
}

// A few calls of each kernel at sizes that cross its tails and chunks: small enough for compute-sanitizer's tools,
// which run every access of every kernel through their own checks (scripts/gpu-check.sh sanitizer).
TEST_P(DeviceReductions, AFewAllreducesForTheSanitizers) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnRanks(GetParam(), 2, settingsFor(GetParam()), [](Communicator& c, cudaStream_t s) {
    for (std::size_t count : {std::size_t{1}, std::size_t{4097}, std::size_t{(64u << 10) + 3}}) {
      allreduceCase(c, s, DataType::kFloat32, ReduceKind::kSum, count, false);
      allreduceCase(c, s, DataType::kBFloat16, ReduceKind::kMax, count, true);
    }
  });
  EXPECT_EQ(testing::failures(results), "");
}

// 3 ranks (shards that do not divide evenly, an odd divisor for avg) and 4; with one GPU, 4 Mi elements in place of
// 16 Mi keeps the time-sliced run short and still pipelines through many chunks.
TEST_P(DeviceReductions, AllreduceOn3And4Ranks) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const std::size_t largest = (gpuIsShared() ? std::size_t{4} << 20 : std::size_t{16} << 20) + 3;
  for (int ranks : {3, 4}) {
    const auto results = runOnRanks(GetParam(), ranks, settingsFor(GetParam()), [&](Communicator& c, cudaStream_t s) {
      for (DataType type : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt64}) {
        for (std::size_t count : {std::size_t{1}, std::size_t{7}, megPlus3(type), largest}) {
          for (bool inPlace : {false, true}) allreduceCase(c, s, type, ReduceKind::kSum, count, inPlace);
        }
      }
      allreduceCase(c, s, DataType::kFloat16, ReduceKind::kAvg, 4097, false);
      allreduceCase(c, s, DataType::kFloat8E4M3, ReduceKind::kSum, 4097, true);
      allreduceCase(c, s, DataType::kFloat8E5M2, ReduceKind::kAvg, 4097, false);
      allreduceCase(c, s, DataType::kFloat8E4M3, ReduceKind::kPremulSum, megPlus3(DataType::kFloat8E4M3), false);
      allreduceCase(c, s, DataType::kInt32, ReduceKind::kAvg, 4097, false);
      allreduceCase(c, s, DataType::kUint8, ReduceKind::kMin, 4097, true);
      allreduceCase(c, s, DataType::kFloat32, ReduceKind::kPremulSum, 4097, true);
    });
    EXPECT_EQ(testing::failures(results), "") << ranks << " ranks";
  }
}

// ll: the LL kernel up to its 64 KiB, one-shot above; staged: through host memory and the host path; shared: the
// shared-GPU path of processes (on one GPU the leader path); pooled: the same on memory CUDA IPC cannot share
// (on one GPU the leader path's fallback); threads: thread ranks (on one GPU the shared-GPU path of one context);
// detached: the shared path's calls run apart from their callers (CallOptions::streamAsync), on host copies.
INSTANTIATE_TEST_SUITE_P(Algorithms, DeviceReductions,
                         ::testing::Values("ll", "oneshot", "oneshot_4k", "twoshot", "staged", "shared", "pooled",
                                           "threads", "detached"),
                         [](const auto& info) { return info.param; });

// The collectives other than allreduce on every path of ranks that share a GPU, wherever the test runs: braid's
// kernels ("kernels": BRAID_CUDA_SHARED_GPU=kernels, the only path where every rank has a GPU of its own), the
// shared-GPU path of processes ("shared": BRAID_ALGO=shared, which takes it for every collective; on one GPU the
// leader path), the same on memory CUDA IPC cannot share ("pooled": on one GPU the leader path's fallback), and
// thread ranks with the path braid chooses ("threads": on one GPU the shared-GPU path of one context), and the shared
// path's calls run apart from their callers ("detached": CallOptions::streamAsync, the NCCL library's calls).
class DeviceCollectives : public ::testing::TestWithParam<std::string> {
 protected:
  static Settings pathSettings() {
    const bool shared = GetParam() == "shared" || GetParam() == "pooled" || GetParam() == "detached";
    Settings s = deviceSettings(shared ? "shared" : "");
    pooledDeviceBytes() = GetParam() == "pooled";
    detachedCalls() = GetParam() == "detached";
    if (GetParam() == "kernels") s.cudaSharedGpu = "kernels";
    return s;
  }
  static std::vector<std::string> run(int ranks, const std::function<void(Communicator&, cudaStream_t)>& body) {
    return runOnRanks(GetParam(), ranks, pathSettings(), body);
  }
};

TEST_P(DeviceCollectives, ReduceAndReduceScatterEveryTypeAndOpOn2Ranks) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = run(2, [](Communicator& c, cudaStream_t s) {
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
  const auto meU = static_cast<std::size_t>(me);
  const AllInputs all(c.size(), type, ReduceKind::kBxor, count * n, salt);  // raw bits, every rank's
  const Bytes& mine = all.of[meU];
  // Block b (of `bytes`) of rank r's input.
  auto block = [&](std::size_t r, std::size_t b) { return all.of[r].data() + b * bytes; };
  auto concat = [&](const std::function<const std::byte*(std::size_t)>& part) {
    Bytes want;
    for (std::size_t r = 0; r < n; ++r) want.insert(want.end(), part(r), part(r) + bytes);
    return want;
  };
  const std::string tag = std::string(dataTypeName(type)) + " count " + std::to_string(count);
  auto check = [&](const std::byte* deviceResult, const Bytes& want, const std::string& what) {
    Bytes got(want.size());
    download(got.data(), deviceResult, want.size(), s);
    requireSameBytes(got.data(), want.data(), want.size(), elem, what + " " + tag);
  };
  // allgather and gather: every rank's first block, in rank order; alltoall: block `me` of every rank.
  const Bytes gathered = concat([&](std::size_t r) { return block(r, 0); });
  const Bytes exchanged = concat([&](std::size_t r) { return block(r, meU); });
  DeviceBytes dsend(bytes * n), drecv(bytes * n);
  for (bool inPlace : {false, true}) {
    const char* how = inPlace ? " in place" : "";
    // allgather: in place means send is this rank's block of recv.
    upload(drecv.get() + me * bytes, mine.data(), bytes, s);
    upload(dsend.get(), mine.data(), bytes, s);
    c.allgather(inPlace ? drecv.get() + me * bytes : dsend.get(), drecv.get(), count, type, on(s));
    check(drecv.get(), gathered, std::string("allgather") + how);
    // alltoall
    upload(dsend.get(), mine.data(), bytes * n, s);
    c.alltoall(dsend.get(), inPlace ? dsend.get() : drecv.get(), count, type, on(s));
    check(inPlace ? dsend.get() : drecv.get(), exchanged, std::string("alltoall") + how);
  }
  for (int root = 0; root < c.size(); root += c.size() - 1) {
    const auto rootU = static_cast<std::size_t>(root);
    // broadcast (always in place): the root's first block
    upload(dsend.get(), mine.data(), bytes, s);
    c.broadcast(dsend.get(), count, type, root, on(s));
    check(dsend.get(), Bytes(block(rootU, 0), block(rootU, 0) + bytes), "broadcast root " + std::to_string(root));
    // gather
    upload(dsend.get(), mine.data(), bytes, s);
    c.gather(dsend.get(), drecv.get(), count, type, root, on(s));
    if (me == root) check(drecv.get(), gathered, "gather root " + std::to_string(root));
    // scatter: block `me` of the root's input
    upload(dsend.get(), mine.data(), bytes * n, s);
    c.scatter(dsend.get(), drecv.get(), count, type, root, on(s));
    check(drecv.get(), Bytes(block(rootU, meU), block(rootU, meU) + bytes), "scatter root " + std::to_string(root));
  }
}

constexpr std::size_t kMovingCounts[] = {1, 7, 1024, 262147};

TEST_P(DeviceCollectives, MovingCollectivesOn2Ranks) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  // 64 MiB per rank; 16 MiB where the ranks share one GPU (still far past every chunk and staging size).
  const std::size_t largest = gpuIsShared() ? std::size_t{4} << 20 : std::size_t{16} << 20;
  const auto results = run(2, [&](Communicator& c, cudaStream_t s) {
    for (DataType type :
         {DataType::kUint8, DataType::kFloat8E5M2, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
      for (std::size_t count : kMovingCounts) movingCases(c, s, count, type, count);
    }
    movingCases(c, s, largest, DataType::kFloat32, 99);
  });
  EXPECT_EQ(testing::failures(results), "");
}

TEST_P(DeviceCollectives, MovingCollectivesOn3And4Ranks) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  for (int ranks : {3, 4}) {
    const auto results = run(ranks, [](Communicator& c, cudaStream_t s) {
      for (std::size_t count : kMovingCounts) movingCases(c, s, count, DataType::kFloat32, count);
      movingCases(c, s, (4u << 20) + 1, DataType::kUint8, 5);
    });
    EXPECT_EQ(testing::failures(results), "") << ranks << " ranks";
  }
}

// Every moving collective at a size that crosses a 16-byte tail, for compute-sanitizer's tools (gpu-check.sh).
TEST_P(DeviceCollectives, AFewMovingCollectivesForTheSanitizers) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = run(2, [](Communicator& c, cudaStream_t s) {
    for (std::size_t count : {std::size_t{1}, std::size_t{4097}}) movingCases(c, s, count, DataType::kFloat32, count);
  });
  EXPECT_EQ(testing::failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Paths, DeviceCollectives,
                         ::testing::Values("kernels", "shared", "pooled", "threads", "detached"),
                         [](const auto& info) { return info.param; });

// Per-rank counts and point-to-point are always staged through host memory: held by their callers ("blocking") or
// run apart from them ("detached": CallOptions::streamAsync).
class DeviceStaging : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceStaging, VariableCountsAndPointToPointStageOn2Ranks) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const Settings settings = deviceSettings();
  detachedCalls() = GetParam() == "detached";
  const auto results = runOnGpus(2, 1, settings, [](Communicator& c, cudaStream_t s) {
    const int me = c.rank();
    const std::vector<std::size_t> counts = {3, 1000}, displs = {0, 5};
    const Bytes mine = exactInput(me, DataType::kInt32, ReduceKind::kBxor, counts[me], 7);
    // Rank r's elements at displs[r]; elements 3 and 4 are nobody's and not compared.
    Bytes want(1005 * 4), got(1005 * 4);
    for (int r = 0; r < 2; ++r) {
      const Bytes theirs = exactInput(r, DataType::kInt32, ReduceKind::kBxor, counts[r], 7);
      std::memcpy(want.data() + displs[r] * 4, theirs.data(), theirs.size());
    }
    DeviceBytes dsend(mine.size()), drecv(want.size());
    upload(dsend.get(), mine.data(), mine.size(), s);
    cuda::checkCuda(cudaMemsetAsync(drecv.get(), 0, want.size(), s), "cudaMemsetAsync");
    c.allgatherv(dsend.get(), counts[me], drecv.get(), counts, displs, DataType::kInt32, on(s));
    download(got.data(), drecv.get(), got.size(), s);
    requireSameBytes(got.data() + 20, want.data() + 20, 4000, 4, "allgatherv");
    requireSameBytes(got.data(), want.data(), 12, 4, "allgatherv");
    // send/recv: rank 0 sends 1 MiB to rank 1.
    const std::size_t n = 1u << 18;
    DeviceBytes buf(n * 4);
    const Bytes data = exactInput(0, DataType::kFloat32, ReduceKind::kSum, n, 8);
    if (me == 0) {
      upload(buf.get(), data.data(), data.size(), s);
      c.send(buf.get(), n, DataType::kFloat32, 1, 0, on(s));
    } else {
      c.recv(buf.get(), n, DataType::kFloat32, 0, 0, on(s));
      Bytes back(data.size());
      download(back.data(), buf.get(), back.size(), s);
      requireSameBytes(back.data(), data.data(), data.size(), 4, "send/recv");
    }
  });
  EXPECT_EQ(testing::failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Callers, DeviceStaging, ::testing::Values("blocking", "detached"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace braid::gputest
