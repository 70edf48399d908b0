// Data-movement collectives that read their peers' buffers in one copy (algorithms/host/single_copy.hpp): three
// ranks as threads over a memory arena, each reading its peers through a reader that counts its reads and can refuse
// them. Every collective gives the same output whether it read in place or went through the slots; a rank that
// declines sends the whole call through the slots; a refused read sends that call through them again on every rank
// and turns single copy off for the calls after it; in-place alltoalls and blocks below the range never read.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "algorithms/host/local_collectives.hpp"
#include "transport/local_fabric.hpp"
#include "transport/memory/memory_local_group.hpp"
#include "tuning/shm_slot.hpp"

namespace braid::host {
namespace {

constexpr int kRanks = 3;
constexpr std::size_t kSlotBytes = 16 << 10;
// Elements of a block in the single-copy range (at least a quarter of a slot), and one below it.
constexpr std::size_t kInRange = 3000;
constexpr std::size_t kBelow = 500;

struct Rank {
  std::atomic<int> reads{0};
  std::atomic<bool> refuse{false};
  bool declines = false;
  int delayMs = 0;  // before each read
  std::atomic<std::int64_t> lastReadDoneNs{0};
};

std::int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Group {
 public:
  Group()
      : layout_(transport::FabricLayout::compute(kRanks, kSlotBytes, 4096)),
        arena_(std::make_shared<transport::MemoryArena>(kRanks, layout_.regionBytes)),
        ranks_(kRanks) {
    for (int r = 0; r < kRanks; ++r) {
      fabrics_.push_back(
          std::make_unique<transport::LocalFabric>(std::make_unique<transport::MemoryLocalGroup>(arena_, r), layout_));
    }
  }

  Rank& rank(int r) { return ranks_[r]; }

  /// Makes the engines, each with its rank's reader and choice (once: they keep their state from call to call).
  void start() {
    for (int r = 0; r < kRanks; ++r) {
      LocalCollectives::Options options;
      options.singleCopy = !ranks_[r].declines;
      Rank* me = &ranks_[r];
      options.readPeerMemory = [me](const transport::ProcessIdentity& owner, std::uint64_t address, void* out,
                                    std::size_t bytes, std::string* why) {
        me->reads.fetch_add(1);
        if (me->refuse.load()) {
          *why = "refused by the test";
          return false;
        }
        if (me->delayMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(me->delayMs));
        const bool read = transport::readProcessMemory(owner, address, out, bytes, why);
        me->lastReadDoneNs.store(nowNs());
        return read;
      };
      engines_.push_back(std::make_unique<LocalCollectives>(*fabrics_[r], options));
    }
  }

  /// Set: rank r's calls end with Aborted.
  std::atomic<bool>& aborted(int r) { return aborted_[r]; }

  /// Runs body(rank, engine, env) on a thread per rank; "" when none threw, else what each threw.
  std::string run(const std::function<void(int, LocalCollectives&, const OpEnv&)>& body) {
    if (engines_.empty()) start();
    std::vector<std::string> errors(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r) {
      threads.emplace_back([&, r] {
        OpEnv env;
        env.context = CallContext{.rank = r, .peer = -1, .op = "test", .seq = seq_};
        env.timeoutSeconds = 20;
        env.aborted = &aborted_[r];
        try {
          body(r, *engines_[r], env);
        } catch (const std::exception& e) {
          errors[r] = "rank " + std::to_string(r) + ": " + e.what() + "\n";
        }
      });
    }
    for (std::thread& t : threads) t.join();
    ++seq_;
    std::string all;
    for (const std::string& e : errors) all += e;
    return all;
  }

  int reads() {
    int n = 0;
    for (Rank& r : ranks_) n += r.reads.exchange(0);
    return n;
  }

 private:
  transport::FabricLayout layout_;
  std::shared_ptr<transport::MemoryArena> arena_;
  std::vector<std::unique_ptr<transport::LocalFabric>> fabrics_;
  std::vector<Rank> ranks_;
  std::vector<std::unique_ptr<LocalCollectives>> engines_;
  std::atomic<bool> aborted_[kRanks] = {};
  std::int64_t seq_ = 0;
};

std::vector<std::uint32_t> made(std::size_t n, std::uint32_t by) {
  std::vector<std::uint32_t> v(n);
  std::iota(v.begin(), v.end(), by * 1000003u);
  return v;
}

void expectEqual(const std::vector<std::uint32_t>& got, const std::vector<std::uint32_t>& want,
                 const std::string& what) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      throw std::runtime_error(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                               ", expected " + std::to_string(want[i]));
    }
  }
}

using Case = std::function<void(int, LocalCollectives&, const OpEnv&, std::size_t)>;

// Every data-movement collective, each checked against what it must give; `count` elements a block.
std::vector<std::pair<std::string, Case>> collectives() {
  const auto n = static_cast<std::size_t>(kRanks);
  const auto u = DataType::kUint32;
  std::vector<std::pair<std::string, Case>> all;
  all.emplace_back("allgather", [=](int r, LocalCollectives& c, const OpEnv& env, std::size_t count) {
    std::vector<std::uint32_t> mine = made(count, r), out(n * count, 0), want;
    for (std::size_t p = 0; p < n; ++p) {
      const auto block = made(count, static_cast<std::uint32_t>(p));
      want.insert(want.end(), block.begin(), block.end());
    }
    c.allgather(mine.data(), out.data(), count, u, env);
    expectEqual(out, want, "allgather");
    std::vector<std::uint32_t> inPlace(n * count, 0);
    std::copy(mine.begin(), mine.end(), inPlace.begin() + static_cast<std::ptrdiff_t>(r * count));
    c.allgather(inPlace.data() + r * count, inPlace.data(), count, u, env);
    expectEqual(inPlace, want, "allgather in place");
  });
  all.emplace_back("allgatherv", [=](int r, LocalCollectives& c, const OpEnv& env, std::size_t count) {
    // rank p gives count + p elements
    std::vector<std::size_t> counts, displs;
    std::vector<std::uint32_t> want;
    for (std::size_t p = 0; p < n; ++p) {
      displs.push_back(want.size());
      counts.push_back(count + p);
      const auto block = made(count + p, static_cast<std::uint32_t>(p + 10));
      want.insert(want.end(), block.begin(), block.end());
    }
    std::vector<std::uint32_t> mine = made(count + r, static_cast<std::uint32_t>(r + 10)), out(want.size(), 0);
    c.allgatherv(mine.data(), mine.size(), out.data(), counts, displs, u, env);
    expectEqual(out, want, "allgatherv");
  });
  all.emplace_back("broadcast", [=](int r, LocalCollectives& c, const OpEnv& env, std::size_t count) {
    std::vector<std::uint32_t> buf = r == 1 ? made(count, 20) : std::vector<std::uint32_t>(count, 0);
    c.broadcast(buf.data(), count, u, 1, env);
    expectEqual(buf, made(count, 20), "broadcast");
  });
  all.emplace_back("gather", [=](int r, LocalCollectives& c, const OpEnv& env, std::size_t count) {
    std::vector<std::uint32_t> mine = made(count, 30 + r), out(n * count, 0), want;
    for (std::size_t p = 0; p < n; ++p) {
      const auto block = made(count, static_cast<std::uint32_t>(30 + p));
      want.insert(want.end(), block.begin(), block.end());
    }
    c.gather(mine.data(), out.data(), count, u, 2, env);
    if (r == 2) expectEqual(out, want, "gather");
  });
  all.emplace_back("scatter", [=](int r, LocalCollectives& c, const OpEnv& env, std::size_t count) {
    std::vector<std::uint32_t> in, got(count, 0);
    for (std::size_t p = 0; p < n; ++p) {
      const auto block = made(count, static_cast<std::uint32_t>(40 + p));
      in.insert(in.end(), block.begin(), block.end());
    }
    c.scatter(in.data(), got.data(), count, u, 0, env);
    expectEqual(got, made(count, 40 + r), "scatter");
  });
  all.emplace_back("alltoall", [=](int r, LocalCollectives& c, const OpEnv& env, std::size_t count) {
    // block p of rank q's input is made(count, 100 q + p)
    std::vector<std::uint32_t> in, out(n * count, 0), want;
    for (std::size_t p = 0; p < n; ++p) {
      const auto sent = made(count, static_cast<std::uint32_t>(100 * r + p));
      in.insert(in.end(), sent.begin(), sent.end());
      const auto got = made(count, static_cast<std::uint32_t>(100 * p + r));
      want.insert(want.end(), got.begin(), got.end());
    }
    c.alltoall(in.data(), out.data(), count, u, env);
    expectEqual(out, want, "alltoall");
  });
  all.emplace_back("alltoallv", [=](int r, LocalCollectives& c, const OpEnv& env, std::size_t count) {
    // rank p sends rank q count + q + 2p elements, made(.., 500 + 10 p + q); blocks lie apart, three elements between
    const auto size = [&](std::size_t from, std::size_t to) { return count + to + 2 * from; };
    const auto me = static_cast<std::size_t>(r);
    std::vector<std::size_t> sendCounts, sendDispls, recvCounts, recvDispls;
    std::vector<std::uint32_t> in, want;
    for (std::size_t q = 0; q < n; ++q) {
      sendDispls.push_back(in.size());
      sendCounts.push_back(size(me, q));
      const auto block = made(size(me, q), static_cast<std::uint32_t>(500 + 10 * me + q));
      in.insert(in.end(), block.begin(), block.end());
      in.resize(in.size() + 3, 7);
      recvDispls.push_back(want.size());
      recvCounts.push_back(size(q, me));
      const auto got = made(size(q, me), static_cast<std::uint32_t>(500 + 10 * q + me));
      want.insert(want.end(), got.begin(), got.end());
      want.resize(want.size() + 3, 0);
    }
    std::vector<std::uint32_t> out(want.size(), 0);
    c.alltoallv(in.data(), sendCounts, sendDispls, out.data(), recvCounts, recvDispls, u, env);
    expectEqual(out, want, "alltoallv");
  });
  return all;
}

// Runs every collective with blocks of `count`; "" when each gave what it must, and `reads` says whether each read
// its peers (expected: whether each must have).
std::string runEach(Group& g, std::size_t count, bool expectReads) {
  std::string wrong;
  for (const auto& [name, body] : collectives()) {
    wrong += g.run([&, body = body](int r, LocalCollectives& c, const OpEnv& env) { body(r, c, env, count); });
    const int reads = g.reads();
    if ((reads > 0) != expectReads) wrong += name + ": " + std::to_string(reads) + " reads\n";
  }
  return wrong;
}

void alltoallInPlace(int r, LocalCollectives& c, const OpEnv& env, std::size_t count) {
  const auto n = static_cast<std::size_t>(kRanks);
  std::vector<std::uint32_t> buf, want;
  for (std::size_t p = 0; p < n; ++p) {
    const auto sent = made(count, static_cast<std::uint32_t>(100 * r + p));
    buf.insert(buf.end(), sent.begin(), sent.end());
    const auto got = made(count, static_cast<std::uint32_t>(100 * p + r));
    want.insert(want.end(), got.begin(), got.end());
  }
  c.alltoall(buf.data(), buf.data(), count, DataType::kUint32, env);
  expectEqual(buf, want, "alltoall in place");
}

TEST(SingleCopyCollectives, TheRangeStartsAtAQuarterSlot) {
  const tuning::ByteRange range = tuning::shmSingleCopyBlocks(kSlotBytes);
  EXPECT_EQ(range.min, kSlotBytes / 4);
  EXPECT_TRUE(range.holds(kInRange * 4));
  EXPECT_FALSE(range.holds(kBelow * 4));
  EXPECT_FALSE(range.holds(range.max + 1));
}

TEST(SingleCopyCollectives, EveryCollectiveReadsItsPeersInPlace) {
  Group g;
  EXPECT_EQ(runEach(g, kInRange, true), "");
}

TEST(SingleCopyCollectives, SmallBlocksAndInPlaceAlltoallsGoThroughTheSlots) {
  Group g;
  EXPECT_EQ(runEach(g, kBelow, false), "");
  EXPECT_EQ(g.run([](int r, LocalCollectives& c, const OpEnv& env) { alltoallInPlace(r, c, env, kInRange); }), "");
  EXPECT_EQ(g.reads(), 0);
}

TEST(SingleCopyCollectives, ARankThatDeclinesSendsEveryRankThroughTheSlots) {
  Group g;
  g.rank(1).declines = true;
  EXPECT_EQ(runEach(g, kInRange, false), "");
}

TEST(SingleCopyCollectives, ARefusedReadRunsTheCallThroughTheSlotsAndTurnsSingleCopyOff) {
  Group g;
  g.rank(2).refuse = true;
  EXPECT_EQ(g.run([](int r, LocalCollectives& c, const OpEnv& env) {
    std::vector<std::uint32_t> mine = made(kInRange, r), out(kRanks * kInRange, 0), want;
    for (int p = 0; p < kRanks; ++p) {
      const auto block = made(kInRange, static_cast<std::uint32_t>(p));
      want.insert(want.end(), block.begin(), block.end());
    }
    c.allgather(mine.data(), out.data(), kInRange, DataType::kUint32, env);
    expectEqual(out, want, "the allgather whose read was refused");
  }),
            "");
  EXPECT_GT(g.reads(), 0);
  g.rank(2).refuse = false;
  EXPECT_EQ(runEach(g, kInRange, false), "");
}

// Rank 2 reads slowly; rank 0 is aborted 50 ms in, while rank 2 still copies its block (or, with `rank1LateMs`, while
// rank 0 waits in the first round for rank 1), and its buffer goes away as soon as its call returns: rank 2's copies
// from it must have ended by then, or never begun. Nothing here marks rank 0 broken as its communicator would on
// the way out, later: the engine tells its peers itself before it returns.
void expectTheFailingRankWaitsForCopies(int rank1LateMs) {
  Group g;
  g.rank(2).delayMs = 300;
  std::atomic<std::int64_t> rank0ReturnedNs{0};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    g.aborted(0).store(true);
  });
  const std::string errors = g.run([&](int r, LocalCollectives& c, const OpEnv& env) {
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(rank1LateMs));
    std::vector<std::uint32_t> mine = made(kInRange, r), out(kRanks * kInRange, 0);
    try {
      c.allgather(mine.data(), out.data(), kInRange, DataType::kUint32, env);
    } catch (const Error&) {
      if (r == 0) rank0ReturnedNs.store(nowNs());
      throw;
    }
  });
  aborter.join();
  EXPECT_NE(errors.find("rank 0: "), std::string::npos) << errors;
  EXPECT_NE(errors.find("aborted"), std::string::npos) << errors;
  // Rank 2 copied, and finished before rank 0 returned; or (rank 1 late) it completed the first round only once
  // rank 0 had broken, and copied nothing.
  if (rank1LateMs == 0) {
    ASSERT_GT(g.rank(2).lastReadDoneNs.load(), 0) << errors;
  } else {
    EXPECT_NE(errors.find("rank 2: braid PeerLost [rank 2, peer 0"), std::string::npos) << errors;
  }
  EXPECT_GE(rank0ReturnedNs.load(), g.rank(2).lastReadDoneNs.load());
}

TEST(SingleCopyCollectives, ARankThatFailsInTheLastRoundWaitsForThreadRanksStillCopyingItsBuffer) {
  expectTheFailingRankWaitsForCopies(0);
}

TEST(SingleCopyCollectives, ARankThatFailsInTheFirstRoundIsReadByNoPeerAfterItReturned) {
  expectTheFailingRankWaitsForCopies(150);
}

// A call whose ranks disagree fails on every rank in its first round, and none has read another's buffer: none
// waits for copies (their linger would hold each rank for seconds), and the engines go on.
TEST(SingleCopyCollectives, AMismatchInTheFirstRoundFailsAtOnceAndTheEnginesGoOn) {
  Group g;
  const auto start = std::chrono::steady_clock::now();
  const std::string errors = g.run([](int r, LocalCollectives& c, const OpEnv& env) {
    const std::size_t count = r == 1 ? kInRange + 1 : kInRange;
    std::vector<std::uint32_t> mine = made(count, r), out(kRanks * count, 0);
    c.allgather(mine.data(), out.data(), count, DataType::kUint32, env);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_NE(errors.find("rank " + std::to_string(r) + ": braid Mismatch"), std::string::npos) << errors;
  }
  EXPECT_EQ(g.reads(), 0);
  EXPECT_LT(seconds, 1.0) << "a rank lingered after a mismatch";
  EXPECT_EQ(runEach(g, kInRange, true), "");
}

}  // namespace
}  // namespace braid::host
