// The windowed ring allreduce (Engine::allreduceStaged), which carries GPU buffers between hosts: here its
// buffers are plain memory behind a StagedBuffer whose copies land late or early, so that an algorithm reading a
// range before it awaited it, or handing over a range before it was final, gives a wrong result.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "algorithms/engine.hpp"
#include "algorithms/host/net/net_engine.hpp"
#include "algorithms/host/reduce_cpu.hpp"
#include "core/communicator_impl.hpp"
#include "support/collective_cases.hpp"
#include "support/internals.hpp"
#include "support/rank_runner.hpp"
#include "transport/tcp/tcp_mesh.hpp"

namespace braid::testing {
namespace {

// Copies in land at the latest when awaited and sometimes earlier (at a delivery); copies out are done at once.
// Slots start out as garbage. Every output byte must be delivered exactly once.
class LateCopies final : public StagedBuffer {
 public:
  static constexpr std::size_t kSameAsInput = ~std::size_t{0};
  /// `reducing`: this side does the reductions (as the GPU does), lazily like the copies in.
  /// `owner`: when given, the slots and the receive area are registered with it, as device/staging.cpp registers
  /// its pinned buffers.
  /// `outputBytes`: the output's size where it differs from the input's (allgather, reduce-scatter).
  LateCopies(std::vector<std::byte> input, std::size_t windowBytes, unsigned seed, bool reducing = false,
             Engine* owner = nullptr, std::size_t outputBytes = kSameAsInput)
      : owner_(owner),
        reducing_(reducing),
        input_(std::move(input)),
        output_(outputBytes == kSameAsInput ? input_.size() : outputBytes, std::byte{0x5a}),
        delivered_(output_.size(), 0),
        window_(windowBytes),
        rng_(seed) {
    for (auto& s : slots_) s.assign(windowBytes, std::byte{0xa5});
    if (owner_ == nullptr) return;
    for (int i = 0; i < 2; ++i) {
      regions_[i] = owner_->registerRegion(slots_[i].data(), windowBytes, transport::RegionMemory::kPinnedHost);
    }
  }
  ~LateCopies() override {
    if (owner_ == nullptr) return;
    for (const transport::Region* r : regions_) owner_->deregisterRegion(r);
  }

  std::size_t windowBytes() const override { return window_; }
  std::byte* slot(int which) override { return slots_[which].data(); }

  std::size_t fetch(std::byte* dst, std::size_t offset, std::size_t bytes) override {
    if (offset + bytes > input_.size()) throw std::logic_error("fetch past the input");
    pending_.push_back({dst, offset, bytes});
    fetchedBytes_ += bytes;
    return pending_.size() - 1;
  }
  bool reducesWhereTheDataIs() const override { return reducing_; }
  std::size_t reduce(std::byte* dst, const std::byte* received, std::size_t offset, std::size_t count, DataType type,
                     ReduceKind kind, int avgDivisor) override {
    if (!reducing_) throw std::logic_error("reduce() on a side that does not reduce");
    if (offset + count * dataTypeSize(type) > input_.size()) throw std::logic_error("reduce past the input");
    // As a GPU: it reads only memory it was given, the received operand from the receive area.
    if (received < receiveArea_.data() ||
        received + count * dataTypeSize(type) > receiveArea_.data() + receiveArea_.size()) {
      throw std::logic_error("reduce() of a received operand outside the receive area");
    }
    Copy c{dst, offset, count * dataTypeSize(type)};
    c.received = received;
    c.type = type;
    c.kind = kind;
    c.avgDivisor = avgDivisor;
    pending_.push_back(c);
    return pending_.size() - 1;
  }
  std::byte* receiveArea(std::size_t bytes) override {
    if (!reducing_) throw std::logic_error("receiveArea() on a side that does not reduce");
    receiveArea_.assign(bytes, std::byte{0xc3});
    if (owner_ != nullptr) {
      owner_->deregisterRegion(regions_[2]);
      regions_[2] = owner_->registerRegion(receiveArea_.data(), bytes, transport::RegionMemory::kPinnedHost);
    }
    return receiveArea_.data();
  }
  std::size_t fetchedBytes() const { return fetchedBytes_; }
  void awaitFetched(std::size_t ticket, const OpEnv&) override {
    while (landed_ <= ticket) land();
  }
  void deliver(const std::byte* src, std::size_t offset, std::size_t bytes) override {
    if (offset + bytes > output_.size()) throw std::logic_error("delivery past the output");
    std::memcpy(output_.data() + offset, src, bytes);
    for (std::size_t i = offset; i < offset + bytes; ++i) ++delivered_[i];
    if (landed_ < pending_.size() && rng_() % 2 == 0) land();  // an early copy in, behind this one
  }

  const std::vector<std::byte>& output() const { return output_; }
  bool deliveredOnce() const {
    for (int d : delivered_) {
      if (d != 1) return false;
    }
    return true;
  }

 private:
  struct Copy {
    std::byte* dst;
    std::size_t offset, bytes;
    const std::byte* received = nullptr;  // a reduction: dst = input op received
    DataType type = DataType::kUint8;
    ReduceKind kind = ReduceKind::kSum;
    int avgDivisor = 1;
  };
  void land() {
    const Copy& c = pending_[landed_++];
    if (c.received == nullptr) {
      std::memcpy(c.dst, input_.data() + c.offset, c.bytes);
      return;
    }
    const void* srcs[2] = {input_.data() + c.offset, c.received};
    host::reduceSources(c.dst, srcs, 2, c.bytes / dataTypeSize(c.type), c.type, c.kind, c.avgDivisor);
  }

  Engine* owner_;
  const transport::Region* regions_[3] = {nullptr, nullptr, nullptr};
  bool reducing_;
  std::size_t fetchedBytes_ = 0;
  std::vector<std::byte> receiveArea_;
  std::vector<std::byte> input_, output_;
  std::vector<int> delivered_;
  std::vector<std::byte> slots_[2];
  std::size_t window_;
  std::vector<Copy> pending_;
  std::size_t landed_ = 0;
  std::mt19937 rng_;
};

OpEnv envFor(int rank, std::int64_t seq) {
  OpEnv env;
  env.context = CallContext{.rank = rank, .peer = -1, .op = "allreduce", .seq = seq};
  env.timeoutSeconds = 60;
  return env;
}

template <typename T>
std::vector<std::byte> bytesOf(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Small integers in float: every summation order gives the exact sum, so the windows' block boundaries (which
// change the order the ring adds in) cannot hide a wrong operand.
class StagedNetAllreduce : public ::testing::TestWithParam<bool> {};

TEST_P(StagedNetAllreduce, WindowsGiveTheExactSumOnEveryRank) {
  const bool reducing = GetParam();
  for (int n : {2, 3, 4}) {
    Settings s = tcpSettings();
    s.directMaxBytes = 0;  // the ring for every size
    const auto results = runThreads(
        n,
        [&](Communicator& comm) {
          const int r = comm.rank();
          std::int64_t seq = 1000;
          for (std::size_t count : {std::size_t{1}, std::size_t{777}, std::size_t{10000}, std::size_t{65536 + 13}}) {
            for (std::size_t window : {std::size_t{4096}, std::size_t{64 * 1024}, std::size_t{1} << 20}) {
              std::vector<float> in(count);
              for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<float>((i * 7 + r * 13) % 1000);
              LateCopies copies(bytesOf(in), window, static_cast<unsigned>(r * 31 + count), reducing);
              const bool ran = test::implOf(comm).engine().allreduceStaged(
                  copies, count, DataType::kFloat32, ReduceOp{ReduceKind::kSum}, envFor(r, seq++));
              require(ran, strCat("a ring allreduce of ", count, " floats in ", window, " B windows was not staged"));
              require(copies.deliveredOnce(), strCat("not every output byte delivered exactly once (", count,
                                                     " floats, ", window, " B windows)"));
              // Reducing where the data is, a rank copies in only the block it sends unreduced: 1/n of each
              // window, blocks rounded to 64 bytes.
              if (reducing) {
                const std::size_t total = count * sizeof(float);
                const std::size_t most = total / static_cast<std::size_t>(n) + (total / window + 1) * 64;
                require(copies.fetchedBytes() <= most,
                        strCat("fetched ", copies.fetchedBytes(), " of ", total, " bytes (at most ", most, ")"));
              }
              std::vector<float> out(count);
              std::memcpy(out.data(), copies.output().data(), count * sizeof(float));
              for (std::size_t i = 0; i < count; ++i) {
                float want = 0;
                for (int p = 0; p < n; ++p) want += static_cast<float>((i * 7 + p * 13) % 1000);
                if (out[i] != want) {
                  throw std::runtime_error(
                      strCat("element ", i, " of ", count, " (", window, " B windows): ", out[i], " != ", want));
                }
              }
            }
          }
        },
        s);
    EXPECT_EQ(failures(results), "") << n << " ranks";
  }
}

// What an RDMA transport needs to move the windows without a copy (docs/NETWORK.md): every message the windowed ring
// posts lies in memory its owner registered (the slots, the receive area), and the mesh was told so.
TEST_P(StagedNetAllreduce, EveryMessageMovesRegisteredMemory) {
  const bool reducing = GetParam();
  Settings s = tcpSettings();
  s.directMaxBytes = 0;
  const auto results = runThreads(
      3,
      [&](Communicator& comm) {
        const int r = comm.rank();
        auto& engine = test::implOf(comm).engine();
        auto& mesh = dynamic_cast<tcp::TcpMesh&>(dynamic_cast<host::NetEngine&>(engine).transport());
        const std::size_t count = (std::size_t{1} << 18) + 13;
        // A host-buffer ring allreduce receives into the engine's registered scratch, and sends from the caller's
        // memory, which nobody registered. (First: the engine-level call below takes a later sequence number.)
        std::vector<float> host(count, 1.0f);
        const std::uint64_t before = mesh.postedRegisteredBytes(), all = mesh.postedBytes();
        comm.allreduce(host.data(), host.data(), count, DataType::kFloat32, ReduceKind::kSum);
        const std::uint64_t inRegions = mesh.postedRegisteredBytes() - before;
        require(inRegions > 0 && inRegions < mesh.postedBytes() - all,
                strCat(inRegions, " of ", mesh.postedBytes() - all, " bytes of a plain ring allreduce in regions"));
        std::vector<float> in(count, static_cast<float>(r + 1));
        const std::uint64_t posted = mesh.postedBytes(), registered = mesh.postedRegisteredBytes();
        {
          LateCopies copies(bytesOf(in), 64 * 1024, static_cast<unsigned>(r), reducing, &engine);
          require(
              engine.allreduceStaged(copies, count, DataType::kFloat32, ReduceOp{ReduceKind::kSum}, envFor(r, 1000)),
              "the ring allreduce was not staged");
          std::vector<float> out(count);
          std::memcpy(out.data(), copies.output().data(), count * sizeof(float));
          for (std::size_t i = 0; i < count; ++i) require(out[i] == 6.0f, strCat("element ", i, " is ", out[i]));
        }
        const std::uint64_t moved = mesh.postedBytes() - posted;
        require(moved >= 2 * 2 * count * sizeof(float) / 3, strCat("only ", moved, " bytes posted"));
        require(
            mesh.postedRegisteredBytes() - registered == moved,
            strCat(mesh.postedRegisteredBytes() - registered, " of ", moved, " bytes posted in registered regions"));
      },
      s);
  EXPECT_EQ(failures(results), "");
}

TEST_P(StagedNetAllreduce, MaxOfInt64AndAverageAcrossManyWindows) {
  const bool reducing = GetParam();
  const int n = 3;
  Settings s = tcpSettings();
  s.directMaxBytes = 0;
  const auto results = runThreads(
      n,
      [&](Communicator& comm) {
        const int r = comm.rank();
        const std::size_t count = 50000;
        std::vector<std::int64_t> in(count);
        for (std::size_t i = 0; i < count; ++i)
          in[i] = static_cast<std::int64_t>((i * 2654435761u + r) % 100003) - 50000;
        LateCopies maxCopies(bytesOf(in), 8192, 7u + r, reducing);
        require(test::implOf(comm).engine().allreduceStaged(maxCopies, count, DataType::kInt64,
                                                            ReduceOp{ReduceKind::kMax}, envFor(r, 2000)),
                "max was not staged");
        for (std::size_t i = 0; i < count; ++i) {
          std::int64_t want = INT64_MIN;
          for (int p = 0; p < n; ++p) {
            want = std::max<std::int64_t>(want, static_cast<std::int64_t>((i * 2654435761u + p) % 100003) - 50000);
          }
          std::int64_t got = 0;
          std::memcpy(&got, maxCopies.output().data() + i * 8, 8);
          if (got != want) throw std::runtime_error(strCat("max element ", i, ": ", got, " != ", want));
        }
        // Averages of multiples of 3 over 3 ranks: exact.
        std::vector<double> d(count);
        for (std::size_t i = 0; i < count; ++i) d[i] = 3.0 * static_cast<double>((i + r) % 97);
        LateCopies avgCopies(bytesOf(d), 16384, 11u + r, reducing);
        require(test::implOf(comm).engine().allreduceStaged(avgCopies, count, DataType::kFloat64,
                                                            ReduceOp{ReduceKind::kAvg}, envFor(r, 2001)),
                "average was not staged");
        require(avgCopies.deliveredOnce(), "average: not every byte delivered once");
        for (std::size_t i = 0; i < count; ++i) {
          double want = 0;
          for (int p = 0; p < n; ++p) want += 3.0 * static_cast<double>((i + p) % 97);
          want /= n;
          double got = 0;
          std::memcpy(&got, avgCopies.output().data() + i * 8, 8);
          if (got != want) throw std::runtime_error(strCat("average element ", i, ": ", got, " != ", want));
        }
      },
      s);
  EXPECT_EQ(failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(HostOrDataSide, StagedNetAllreduce, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "ReducedWhereTheDataIs" : "ReducedOnTheHost"; });

// The windowed allgather and reduce-scatter (GPU buffers between hosts): every piece of every window lands in its
// place exactly once, with late copies in; 2 to 4 ranks, windows from one piece per rank to more than the call.
TEST(StagedNetMoves, AllgatherAndReduceScatterWindowByWindow) {
  for (int n : {2, 3, 4}) {
    Settings s = tcpSettings();
    s.directMaxBytes = 0;  // the ring for every size
    const auto results = runThreads(
        n,
        [&](Communicator& comm) {
          const int r = comm.rank();
          const auto un = static_cast<std::size_t>(n);
          auto& engine = test::implOf(comm).engine();
          std::int64_t seq = 1000;
          for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{40009}}) {
            for (std::size_t window : {std::size_t{256}, std::size_t{64 * 1024}, std::size_t{4} << 20}) {
              if (count > 1000 && window < 4096) continue;  // thousands of windows: slow, and nothing new
              const std::string where = strCat(count, " elements, ", window, " B windows");
              // Allgather: rank p's element i is p * 1e6 + i.
              std::vector<std::int64_t> mine(count);
              for (std::size_t i = 0; i < count; ++i) mine[i] = r * 1000000 + static_cast<std::int64_t>(i);
              LateCopies gather(bytesOf(mine), window, static_cast<unsigned>(r + count), false, nullptr,
                                count * un * 8);
              require(engine.allgatherStaged(gather, count, DataType::kInt64, envFor(r, seq++)),
                      "allgather not staged: " + where);
              require(gather.deliveredOnce(), "allgather: not every byte delivered once: " + where);
              std::vector<std::int64_t> all(count * un);
              std::memcpy(all.data(), gather.output().data(), all.size() * 8);
              for (std::size_t i = 0; i < all.size(); ++i) {
                const auto want = static_cast<std::int64_t>(i / count) * 1000000 + static_cast<std::int64_t>(i % count);
                require(all[i] == want, strCat("allgather element ", i, " is ", all[i], ", not ", want, ": ", where));
              }
              // Reduce-scatter: rank p's input element j is (p + 1) * j; rank r gets block r summed.
              std::vector<std::int64_t> in(count * un);
              for (std::size_t j = 0; j < in.size(); ++j) in[j] = (r + 1) * static_cast<std::int64_t>(j);
              LateCopies scatter(bytesOf(in), window, static_cast<unsigned>(r * 7 + count), false, nullptr, count * 8);
              require(engine.reduceScatterStaged(scatter, count, DataType::kInt64, ReduceOp{ReduceKind::kSum},
                                                 envFor(r, seq++)),
                      "reduce-scatter not staged: " + where);
              require(scatter.deliveredOnce(), "reduce-scatter: not every byte delivered once: " + where);
              std::vector<std::int64_t> got(count);
              std::memcpy(got.data(), scatter.output().data(), count * 8);
              const std::int64_t ranks = n;
              for (std::size_t i = 0; i < count; ++i) {
                const auto j = static_cast<std::int64_t>(static_cast<std::size_t>(r) * count + i);
                const std::int64_t want = j * ranks * (ranks + 1) / 2;
                require(got[i] == want,
                        strCat("reduce-scatter element ", i, " is ", got[i], ", not ", want, ": ", where));
              }
            }
          }
        },
        s);
    EXPECT_EQ(failures(results), "") << n << " ranks";
  }
}

// Where the engine would not pipeline (sizes it sends directly, windows too small for a block per rank, a scaled
// sum), it says so on every rank alike and touches nothing.
TEST(StagedNetAllreduceDeclines, WhatItDoesNotPipeline) {
  const auto results = runThreads(
      2,
      [&](Communicator& comm) {
        const int r = comm.rank();
        std::vector<float> in(1024, 1.0f);
        LateCopies small(bytesOf(in), 1 << 20, 1);
        require(!test::implOf(comm).engine().allreduceStaged(small, in.size(), DataType::kFloat32,
                                                             ReduceOp{ReduceKind::kSum}, envFor(r, 3000)),
                "a 4 KiB allreduce (direct) was staged");
        require(small.output()[0] == std::byte{0x5a}, "a declined call delivered something");
        const ReduceOp scaled = ReduceOp::premulSum(0.5);
        std::vector<float> big(1 << 20, 1.0f);
        LateCopies premul(bytesOf(big), 1 << 20, 2);
        require(!test::implOf(comm).engine().allreduceStaged(premul, big.size(), DataType::kFloat32, scaled,
                                                             envFor(r, 3001)),
                "a premultiplied sum was staged");
      },
      tcpSettings());
  EXPECT_EQ(failures(results), "");
}

}  // namespace
}  // namespace braid::testing
