// Calls run on copies of their buffers (algorithms/copied_call.hpp), as the staging engine runs calls on GPU memory:
// here the "device" buffers are plain memory and the copies memcpy, so every collective's ranges, in place or not,
// at the root or not, are checked without a GPU. Thread ranks over the in-memory transport.
#include "algorithms/copied_call.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "core/engine_stack.hpp"
#include "support/rank_runner.hpp"
#include "transport/local_fabric.hpp"
#include "transport/memory/memory_local_group.hpp"

namespace braid {
namespace {

constexpr int kRanks = 3;
constexpr std::int32_t kSentinel = -7;

// memcpy copies, counted: what a call fetched and delivered, in bytes.
class MemcpyCopies final : public BufferCopies {
 public:
  std::byte* arena(std::size_t bytes) override {
    // A fresh arena every call, filled with garbage: nothing may rely on what an earlier call left there.
    arena_.assign(bytes + 64, std::byte{0xAB});
    return arena_.data();
  }
  void fetch(std::byte* to, const void* from, std::size_t bytes) override {
    std::memcpy(to, from, bytes);
    fetched.push_back(bytes);
  }
  void awaitFetched(const OpEnv&) override {}
  void deliver(void* to, const std::byte* from, std::size_t bytes) override {
    std::memcpy(to, from, bytes);
    delivered.push_back(bytes);
  }
  void awaitDelivered(const OpEnv&) override {}

  std::vector<std::size_t> fetched, delivered;

 private:
  std::vector<std::byte> arena_;
};

// A host engine's collectives, run on copies of their buffers.
class OnCopies final : public Collectives {
 public:
  OnCopies(Collectives& host, int size) : host_(host), size_(size) {}
  void run(const CallArgs& call, const OpEnv& env) override {
    copies = MemcpyCopies{};
    runOnCopies(host_, call, size_, copies, env);
  }
  MemcpyCopies copies;

 private:
  Collectives& host_;
  const int size_;
};

OpEnv envFor(int rank, std::int64_t seq) {
  OpEnv env;
  env.context = CallContext{.rank = rank, .peer = -1, .op = "copied", .seq = seq};
  env.timeoutSeconds = 60;
  return env;
}

// Element i of rank r's input.
std::int32_t input(int r, std::size_t i) { return static_cast<std::int32_t>(r * 100 + static_cast<int>(i) + 1); }
std::vector<std::int32_t> inputOf(int r, std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = input(r, i);
  return v;
}

// Runs `body(rank, calls, seq)` on kRanks thread ranks, each with its engine wrapped in OnCopies.
void onRanks(const std::function<void(int, OnCopies&, std::int64_t&)>& body) {
  const Settings s = testing::testSettings();
  const core::HostLayout host{.ranks = kRanks, .cpus = 64, .shmBytes = std::uint64_t{1} << 40};
  const auto layout = core::localFabricLayout(kRanks, s, host);
  auto arena = std::make_shared<transport::MemoryArena>(kRanks, layout.regionBytes);
  std::vector<std::string> failures(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto engine = core::makeLocalEngine(kRanks, std::make_unique<transport::MemoryLocalGroup>(arena, r), s, host);
        OnCopies calls(*engine, kRanks);
        std::int64_t seq = 0;
        body(r, calls, seq);
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(failures[static_cast<std::size_t>(r)], "") << "rank " << r;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

std::string text(const std::vector<std::size_t>& v) {
  std::string s;
  for (std::size_t x : v) s += std::to_string(x) + " ";
  return s;
}

constexpr std::size_t kCount = 5;
constexpr std::size_t kBytes = kCount * sizeof(std::int32_t);
constexpr std::size_t kAll = kBytes * kRanks;

TEST(CopiedCall, ReductionsInAndOutOfPlace) {
  onRanks([](int r, OnCopies& calls, std::int64_t& seq) {
    std::int32_t sum[kCount];
    for (std::size_t i = 0; i < kCount; ++i) sum[i] = input(0, i) + input(1, i) + input(2, i);

    // Out of place: the input in, the output back; the output's tail (past the call) untouched.
    std::vector<std::int32_t> in = inputOf(r, kCount), out(kCount + 2, kSentinel);
    calls.allreduce(in.data(), out.data(), kCount, DataType::kInt32, ReduceKind::kSum, envFor(r, seq++));
    for (std::size_t i = 0; i < kCount; ++i) require(out[i] == sum[i], "allreduce out of place");
    require(out[kCount] == kSentinel && out[kCount + 1] == kSentinel, "allreduce wrote past its output");
    require(calls.copies.fetched == std::vector<std::size_t>{kBytes},
            "allreduce fetched " + text(calls.copies.fetched));
    require(calls.copies.delivered == std::vector<std::size_t>{kBytes}, "allreduce delivered");

    // In place: one range, in and back.
    std::vector<std::int32_t> buf = inputOf(r, kCount);
    calls.allreduce(buf.data(), buf.data(), kCount, DataType::kInt32, ReduceKind::kSum, envFor(r, seq++));
    for (std::size_t i = 0; i < kCount; ++i) require(buf[i] == sum[i], "allreduce in place");
    require(calls.copies.fetched.size() == 1 && calls.copies.delivered.size() == 1, "in place copies once each way");

    // Reduce to rank 1: the others pass no output and get nothing back.
    std::vector<std::int32_t> reduced(kCount, kSentinel);
    calls.reduce(in.data(), r == 1 ? reduced.data() : nullptr, kCount, DataType::kInt32, ReduceKind::kSum, 1,
                 envFor(r, seq++));
    if (r == 1) {
      for (std::size_t i = 0; i < kCount; ++i) require(reduced[i] == sum[i], "reduce at the root");
    }
    require(calls.copies.delivered.size() == (r == 1 ? 1u : 0u), "reduce delivered " + text(calls.copies.delivered));

    // Reduce-scatter out of place, then in place (the output is this rank's block of the input).
    std::vector<std::int32_t> all = inputOf(r, kCount * kRanks), block(kCount, kSentinel);
    calls.reduceScatter(all.data(), block.data(), kCount, DataType::kInt32, ReduceKind::kSum, envFor(r, seq++));
    const std::size_t mine = static_cast<std::size_t>(r) * kCount;
    for (std::size_t i = 0; i < kCount; ++i) {
      require(block[i] == input(0, mine + i) + input(1, mine + i) + input(2, mine + i), "reduce_scatter");
    }
    require(calls.copies.fetched == std::vector<std::size_t>{kAll}, "reduce_scatter fetched");
    calls.reduceScatter(all.data(), all.data() + mine, kCount, DataType::kInt32, ReduceKind::kSum, envFor(r, seq++));
    for (std::size_t i = 0; i < kCount; ++i) require(all[mine + i] == block[i], "reduce_scatter in place");
    require(calls.copies.fetched.size() == 1, "reduce_scatter in place fetches its input once");
  });
}

TEST(CopiedCall, CollectivesThatMoveData) {
  onRanks([](int r, OnCopies& calls, std::int64_t& seq) {
    // Broadcast from rank 2: the root's buffer goes in only, the others' come back only.
    std::vector<std::int32_t> buf = r == 2 ? inputOf(2, kCount) : std::vector<std::int32_t>(kCount, kSentinel);
    calls.broadcast(buf.data(), kCount, DataType::kInt32, 2, envFor(r, seq++));
    for (std::size_t i = 0; i < kCount; ++i) require(buf[i] == input(2, i), "broadcast");
    require(calls.copies.fetched.size() == (r == 2 ? 1u : 0u), "broadcast fetched " + text(calls.copies.fetched));
    require(calls.copies.delivered.size() == (r == 2 ? 0u : 1u), "broadcast delivered");

    // Allgather out of place, then in place (the input is this rank's block of the output).
    std::vector<std::int32_t> in = inputOf(r, kCount), out(kCount * kRanks, kSentinel);
    calls.allgather(in.data(), out.data(), kCount, DataType::kInt32, envFor(r, seq++));
    for (int p = 0; p < kRanks; ++p) {
      for (std::size_t i = 0; i < kCount; ++i) require(out[p * kCount + i] == input(p, i), "allgather");
    }
    std::vector<std::int32_t> place(kCount * kRanks, kSentinel);
    std::copy(in.begin(), in.end(), place.begin() + static_cast<std::ptrdiff_t>(r * kCount));
    calls.allgather(place.data() + r * kCount, place.data(), kCount, DataType::kInt32, envFor(r, seq++));
    require(place == out, "allgather in place");
    require(calls.copies.fetched.size() == 1 && calls.copies.fetched[0] == kBytes, "allgather in place fetched");

    // Gather to rank 0 and scatter from rank 1: the others pass nothing where the call reads or writes nothing.
    std::vector<std::int32_t> gathered(kCount * kRanks, kSentinel);
    calls.gather(in.data(), r == 0 ? gathered.data() : nullptr, kCount, DataType::kInt32, 0, envFor(r, seq++));
    if (r == 0) require(gathered == out, "gather");
    std::vector<std::int32_t> piece(kCount, kSentinel);
    calls.scatter(r == 1 ? out.data() : nullptr, piece.data(), kCount, DataType::kInt32, 1, envFor(r, seq++));
    require(piece == inputOf(r, kCount), "scatter");
    require(calls.copies.fetched.size() == (r == 1 ? 1u : 0u), "scatter fetched");

    // Alltoall out of place and in place: block p of rank r's output is block r of rank p's input.
    std::vector<std::int32_t> blocks = inputOf(r, kCount * kRanks), swapped(kCount * kRanks, kSentinel);
    calls.alltoall(blocks.data(), swapped.data(), kCount, DataType::kInt32, envFor(r, seq++));
    for (int p = 0; p < kRanks; ++p) {
      for (std::size_t i = 0; i < kCount; ++i) {
        require(swapped[p * kCount + i] == input(p, static_cast<std::size_t>(r) * kCount + i), "alltoall");
      }
    }
    calls.alltoall(blocks.data(), blocks.data(), kCount, DataType::kInt32, envFor(r, seq++));
    require(blocks == swapped, "alltoall in place");
  });
}

TEST(CopiedCall, PerRankCountsLeaveTheGapsAsTheyWere) {
  onRanks([](int r, OnCopies& calls, std::int64_t& seq) {
    // Rank p sends p + 1 elements; block p lands at 4p, so elements between the blocks are nobody's.
    const std::vector<std::size_t> counts = {1, 2, 3}, displs = {0, 4, 8};
    std::vector<std::int32_t> in = inputOf(r, counts[static_cast<std::size_t>(r)]), out(12, kSentinel);
    calls.allgatherv(in.data(), in.size(), out.data(), counts, displs, DataType::kInt32, envFor(r, seq++));
    for (int p = 0; p < kRanks; ++p) {
      for (std::size_t i = 0; i < counts[static_cast<std::size_t>(p)]; ++i) {
        require(out[displs[static_cast<std::size_t>(p)] + i] == input(p, i), "allgatherv");
      }
    }
    for (std::size_t at : {1, 2, 3, 6, 7, 11}) require(out[at] == kSentinel, "allgatherv wrote into a gap");

    // Alltoallv: rank r sends p + 1 elements to rank p, from offset 2p; receives r + 1 from each, at 3p.
    std::vector<std::size_t> sendCounts(kRanks), sendDispls(kRanks), recvCounts(kRanks), recvDispls(kRanks);
    for (int p = 0; p < kRanks; ++p) {
      const auto i = static_cast<std::size_t>(p);
      sendCounts[i] = i + 1;
      sendDispls[i] = 2 * i;
      recvCounts[i] = static_cast<std::size_t>(r) + 1;
      recvDispls[i] = 3 * i;
    }
    std::vector<std::int32_t> src = inputOf(r, 7), dst(9, kSentinel);
    calls.alltoallv(src.data(), sendCounts, sendDispls, dst.data(), recvCounts, recvDispls, DataType::kInt32,
                    envFor(r, seq++));
    for (int p = 0; p < kRanks; ++p) {
      for (std::size_t i = 0; i <= static_cast<std::size_t>(r); ++i) {
        require(dst[3 * static_cast<std::size_t>(p) + i] == input(p, 2 * static_cast<std::size_t>(r) + i), "alltoallv");
      }
      for (std::size_t i = static_cast<std::size_t>(r) + 1; i < 3; ++i) {
        require(dst[3 * static_cast<std::size_t>(p) + i] == kSentinel, "alltoallv wrote into a gap");
      }
    }
  });
}

TEST(CopiedCall, PointToPointRingAndBarrier) {
  onRanks([](int r, OnCopies& calls, std::int64_t& seq) {
    std::vector<std::int32_t> out = inputOf(r, kCount), in(kCount, kSentinel);
    const std::vector<P2pOp> ops = {
        P2pOp{P2pOp::Kind::kSend, (r + 1) % kRanks, out.data(), kCount, DataType::kInt32, 7},
        P2pOp{P2pOp::Kind::kRecv, (r + kRanks - 1) % kRanks, in.data(), kCount, DataType::kInt32, 7}};
    calls.pointToPoint(ops, envFor(r, seq++));
    require(in == inputOf((r + kRanks - 1) % kRanks, kCount), "the ring's message");
    require(calls.copies.fetched == std::vector<std::size_t>{kBytes}, "a group fetches what it sends");
    require(calls.copies.delivered == std::vector<std::size_t>{kBytes}, "and delivers what it receives");
    calls.barrier(envFor(r, seq++));
    require(calls.copies.fetched.empty() && calls.copies.delivered.empty(), "a barrier copies nothing");
  });
}

TEST(CopiedCall, ExtentsNameEachCallsRanges) {
  // A non-root's reduce passes no output; a broadcast reads the root's buffer and writes the others'.
  std::int32_t a[4], b[12];
  auto reduce = deviceExtentsOf(CallArgs::reduce(a, b, 4, DataType::kInt32, ReduceKind::kSum, 1), 0, 3);
  ASSERT_EQ(reduce.size(), 2u);
  EXPECT_EQ(reduce[1].at, nullptr);
  auto root = deviceExtentsOf(CallArgs::broadcast(a, 4, DataType::kInt32, 0), 0, 3);
  EXPECT_TRUE(root[0].read);
  EXPECT_FALSE(root[1].written);
  auto other = deviceExtentsOf(CallArgs::broadcast(a, 4, DataType::kInt32, 0), 2, 3);
  EXPECT_FALSE(other[0].read);
  EXPECT_TRUE(other[1].written);
  auto gather = deviceExtentsOf(CallArgs::gather(a, b, 4, DataType::kInt32, 1), 1, 3);
  EXPECT_EQ(gather[1].bytes, sizeof b);
  // Rebuilt on other buffers, a call keeps everything but its pointers.
  std::vector<P2pOp> ops;
  void* at[2] = {b, a};
  const CallArgs moved = onBuffers(CallArgs::gather(a, b, 4, DataType::kInt32, 1), at, ops);
  EXPECT_EQ(moved.send, b);
  EXPECT_EQ(moved.recv, a);
  EXPECT_EQ(moved.root, 1);
  EXPECT_EQ(moved.count, 4u);
  EXPECT_EQ(moved.collective, Collective::kGather);
}

}  // namespace
}  // namespace braid
