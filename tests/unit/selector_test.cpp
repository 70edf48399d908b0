// The host selector: the algorithms of one host describe themselves, and one selector weighs them for the machine
// and the rank count (the cost model), unless BRAID_ALGO forces one or braid tune measured the crossover.
#include "tuning/selector.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <new>
#include <random>

#include "algorithms/host/local_collectives.hpp"
#include "algorithms/host/net/net_engine.hpp"
#include "base/error.hpp"

// Counts the allocations of this test binary while a test asks it to (choose() must make none). Sanitizers bring
// operator new and delete of their own and check that they pair; there the count is not taken.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BRAID_COUNTS_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define BRAID_COUNTS_ALLOCATIONS 0
#endif
#endif
#ifndef BRAID_COUNTS_ALLOCATIONS
#define BRAID_COUNTS_ALLOCATIONS 1
#endif

namespace {
std::atomic<bool> countingAllocations{false};
std::atomic<long> allocations{0};
}  // namespace

#if BRAID_COUNTS_ALLOCATIONS
// Every other form of new and delete (arrays, nothrow, sized) reaches these two in libstdc++.
void* operator new(std::size_t bytes) {
  if (countingAllocations.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
// GCC pairs free() with the standard operator new it sees at the call, not with this replacement.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
#endif

namespace braid::tuning {
namespace {

Settings settingsOf(std::map<std::string, std::string> env) {
  return Settings::fromEnvironment([env](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

Machine machine(int ranks, int cores) { return Machine{.ranks = ranks, .usableCpus = cores, .link = Link::kShm}; }

Selector hostSelector(int ranks, int cores, const Settings& settings = settingsOf({})) {
  return Selector(host::localAllreduceAlgorithms(), machine(ranks, cores), settings, Path::kHost);
}

// The largest size (of powers of two up to 64 MiB) the direct algorithm is chosen for, or 0 when it never is.
std::size_t directUpTo(const Selector& s) {
  std::size_t last = 0;
  for (std::size_t b = 8; b <= (std::size_t{64} << 20); b *= 2) {
    if (s.choose(b).algorithm->id == Algorithm::kShmDirect) last = b;
  }
  return last;
}

TEST(Selector, EveryHostAlgorithmDescribesItself) {
  const auto all = host::localAllreduceAlgorithms();
  ASSERT_EQ(all.size(), 2u);
  for (const AlgorithmDescriptor& a : all) {
    EXPECT_EQ(a.link, Link::kShm) << a.name;
    EXPECT_EQ(a.collective, Collective::kAllreduce) << a.name;
    EXPECT_NE(std::string(a.how), "") << a.name;
  }
  EXPECT_EQ(all[0].id, Algorithm::kShmDirect);
  EXPECT_EQ(all[1].id, Algorithm::kShmRsag);
}

TEST(Selector, TheCrossoverFallsAsRanksGrow) {
  // Two ranks: both read every byte of the peer once, direct in fewer steps, rsag moving half a message less in
  // the rank's own memory: direct for small messages only. One rank: nothing to choose between.
  const std::size_t two = directUpTo(hostSelector(2, 16));
  EXPECT_GE(two, std::size_t{4} << 10);
  EXPECT_LT(two, std::size_t{1} << 20);
  EXPECT_EQ(directUpTo(hostSelector(1, 16)), std::size_t{64} << 20);
  const std::size_t four = directUpTo(hostSelector(4, 16));
  EXPECT_GE(two, four);
  const std::size_t eight = directUpTo(hostSelector(8, 16));
  const std::size_t sixteen = directUpTo(hostSelector(16, 16));
  EXPECT_GT(four, 0u);
  EXPECT_GT(sixteen, 0u);  // a few bytes still go direct
  EXPECT_GE(four, eight);
  EXPECT_GE(eight, sixteen);
  EXPECT_LT(four, std::size_t{64} << 10);  // the fixed 64 KiB crossover was too high for 4 ranks and more
  for (int ranks : {4, 8, 16}) {
    const Selector s = hostSelector(ranks, 16);
    EXPECT_EQ(s.choose(8).algorithm->id, Algorithm::kShmDirect) << ranks;
    EXPECT_EQ(s.choose(std::size_t{1} << 20).algorithm->id, Algorithm::kShmRsag) << ranks;
    EXPECT_EQ(s.choose(8).why, Selection::Why::kModel);
  }
}

TEST(Selector, RanksThatOutnumberTheCoresPreferFewerSteps) {
  EXPECT_GT(directUpTo(hostSelector(8, 2)), directUpTo(hostSelector(8, 16)));
  EXPECT_EQ(directUpTo(hostSelector(8, 0)), directUpTo(hostSelector(8, 16)));  // unknown cores: no penalty
}

TEST(Selector, BraidAlgoForcesAHostAlgorithmAndIgnoresDeviceNames) {
  const Selector rsag = hostSelector(4, 16, settingsOf({{"BRAID_ALGO", "rsag"}}));
  EXPECT_EQ(rsag.choose(8).algorithm->id, Algorithm::kShmRsag);
  EXPECT_EQ(rsag.choose(8).why, Selection::Why::kForced);
  EXPECT_NE(rsag.explain(8).find("forced by BRAID_ALGO"), std::string::npos) << rsag.explain(8);
  const Selector device = hostSelector(4, 16, settingsOf({{"BRAID_ALGO", "twoshot"}}));
  EXPECT_EQ(device.choose(8).why, Selection::Why::kModel);
  try {
    hostSelector(4, 16, settingsOf({{"BRAID_ALGO", "fastest"}}));
    FAIL() << "an unknown algorithm was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("fastest"), std::string::npos) << e.what();
  }
}

TEST(Selector, AMeasuredCrossoverWinsOverTheModel) {
  const Selector s = hostSelector(16, 16, settingsOf({{"BRAID_DIRECT_MAX_BYTES", "256K"}}));
  EXPECT_EQ(s.choose(256 * 1024).algorithm->id, Algorithm::kShmDirect);
  EXPECT_EQ(s.choose(256 * 1024).why, Selection::Why::kMeasured);
  EXPECT_EQ(s.choose(256 * 1024 + 4).algorithm->id, Algorithm::kShmRsag);
  EXPECT_NE(s.explain(4096).find("(262144 B: BRAID_DIRECT_MAX_BYTES from the environment)"), std::string::npos)
      << s.explain(4096);
  // The default value alone is not a measurement.
  EXPECT_EQ(hostSelector(16, 16).choose(32 * 1024).why, Selection::Why::kModel);
}

// Over TCP the algorithms describe themselves too: direct up to BRAID_DIRECT_MAX_BYTES (its default measured over
// loopback: the model does not price the ring's overlap), doubling instead from 4 ranks on (the model, with each
// peer's messages priced), the pipelined ring above.
Selector netSelector(int ranks, const Settings& settings = settingsOf({})) {
  return Selector(host::netAllreduceAlgorithms(), Machine{.ranks = ranks, .usableCpus = 0, .link = Link::kTcp},
                  settings, Path::kHost);
}

TEST(Selector, OverTcpDirectOrDoublingThenTheRing) {
  EXPECT_EQ(netSelector(2).choose(8).algorithm->id, Algorithm::kTcpDirect);
  EXPECT_EQ(netSelector(3).choose(64 * 1024).algorithm->id, Algorithm::kTcpDirect);
  EXPECT_EQ(netSelector(4).choose(8).algorithm->id, Algorithm::kTcpDoubling);
  EXPECT_EQ(netSelector(4).choose(64 * 1024).algorithm->id, Algorithm::kTcpDoubling);
  EXPECT_EQ(netSelector(8).choose(64 * 1024).algorithm->id, Algorithm::kTcpDoubling);
  EXPECT_EQ(netSelector(4).choose(64 * 1024 + 1).algorithm->id, Algorithm::kTcpRing);
  EXPECT_EQ(netSelector(2).choose(64 * 1024 + 1).algorithm->id, Algorithm::kTcpRing);
  EXPECT_EQ(netSelector(4).choose(64 * 1024).why, Selection::Why::kMeasured);
  // One rank has nothing to send: direct copies, whatever the size.
  EXPECT_EQ(netSelector(1).choose(std::size_t{1} << 30).algorithm->id, Algorithm::kTcpDirect);
  // A measured crossover moves the split; 0 sends every size around the ring.
  EXPECT_EQ(netSelector(8, settingsOf({{"BRAID_DIRECT_MAX_BYTES", "0"}})).choose(1024).algorithm->id,
            Algorithm::kTcpRing);
  EXPECT_EQ(netSelector(2, settingsOf({{"BRAID_DIRECT_MAX_BYTES", "1M"}})).choose(1 << 20).algorithm->id,
            Algorithm::kTcpDirect);
  Settings zero = settingsOf({});
  zero.directMaxBytes = 0;  // as the tests of the ring set it
  EXPECT_EQ(netSelector(2, zero).choose(8).algorithm->id, Algorithm::kTcpRing);
}

TEST(Selector, OverTcpBraidAlgoForcesAndExplainSaysWhy) {
  EXPECT_EQ(netSelector(4, settingsOf({{"BRAID_ALGO", "ring"}})).choose(8).algorithm->id, Algorithm::kTcpRing);
  EXPECT_EQ(netSelector(8, settingsOf({{"BRAID_ALGO", "direct"}})).choose(8).algorithm->id, Algorithm::kTcpDirect);
  // Doubling needs 4 ranks: forced on 2 it does not apply, and the usual choice stands.
  EXPECT_EQ(netSelector(2, settingsOf({{"BRAID_ALGO", "doubling"}})).choose(8).algorithm->id, Algorithm::kTcpDirect);
  // A shared-memory name leaves TCP alone.
  EXPECT_EQ(netSelector(4, settingsOf({{"BRAID_ALGO", "rsag"}})).choose(8).algorithm->id, Algorithm::kTcpDoubling);
  const std::string ring = netSelector(4).explain(1 << 20);
  EXPECT_EQ(ring.rfind("ring: measured crossover (65536 B: BRAID_DIRECT_MAX_BYTES's default, measured over tcp)", 0),
            0u)
      << ring;
  EXPECT_NE(ring.find("doubling "), std::string::npos) << ring;
  EXPECT_NE(ring.find("4 ranks (tcp)"), std::string::npos) << ring;
  const std::string doubling = netSelector(8).explain(8);
  EXPECT_EQ(doubling.rfind("doubling:", 0), 0u) << doubling;
}

TEST(Selector, ACrossoverMeasuredForThisRankCountWinsOverTheOneForAll) {
  const Settings table = settingsOf({{"BRAID_DIRECT_MAX_BYTES_BY_RANKS", "2:16K,8:4K"}});
  // Two ranks: rsag from 16 KiB on (as measured on a host where it reads half as much), direct below.
  EXPECT_EQ(hostSelector(2, 16, table).choose(16 * 1024).algorithm->id, Algorithm::kShmDirect);
  EXPECT_EQ(hostSelector(2, 16, table).choose(16 * 1024 + 4).algorithm->id, Algorithm::kShmRsag);
  EXPECT_EQ(hostSelector(2, 16, table).choose(16 * 1024 + 4).why, Selection::Why::kMeasured);
  EXPECT_EQ(hostSelector(8, 16, table).choose(4096 + 4).algorithm->id, Algorithm::kShmRsag);
  EXPECT_NE(hostSelector(8, 16, table).explain(8).find("BRAID_DIRECT_MAX_BYTES_BY_RANKS for 8 ranks"),
            std::string::npos);
  // A rank count the table does not list: the model (or BRAID_DIRECT_MAX_BYTES where given).
  EXPECT_EQ(hostSelector(4, 16, table).choose(8).why, Selection::Why::kModel);
  const Settings both = settingsOf({{"BRAID_DIRECT_MAX_BYTES_BY_RANKS", "2:16K"}, {"BRAID_DIRECT_MAX_BYTES", "1M"}});
  EXPECT_EQ(hostSelector(2, 16, both).choose(1 << 20).algorithm->id, Algorithm::kShmRsag);  // both from the environment
  EXPECT_EQ(hostSelector(4, 16, both).choose(1 << 20).algorithm->id, Algorithm::kShmDirect);
  // TCP's crossover is its own: the shared-memory table does not move it.
  EXPECT_EQ(netSelector(2, table).choose(32 * 1024).algorithm->id, Algorithm::kTcpDirect);
  for (const char* bad : {"8", "x:4K", "8:lots", "0:4K", "8 :4K", "4:1K,,8:4K"}) {
    try {
      hostSelector(8, 16, settingsOf({{"BRAID_DIRECT_MAX_BYTES_BY_RANKS", bad}}));
      FAIL() << "'" << bad << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("BRAID_DIRECT_MAX_BYTES_BY_RANKS"), std::string::npos) << e.what();
    }
  }
}

TEST(Selector, ExplainNamesTheChoiceAndEveryCandidatesCost) {
  const Selector s = hostSelector(8, 16);
  const std::string text = s.explain(1 << 20);
  EXPECT_EQ(text.rfind("rsag: cost model", 0), 0u) << text;
  EXPECT_NE(text.find("direct "), std::string::npos) << text;
  EXPECT_NE(text.find(" us"), std::string::npos) << text;
  EXPECT_NE(text.find("8 ranks (shm)"), std::string::npos) << text;
  const double direct = *s.projectedUs(host::localAllreduceAlgorithms()[0], 1 << 20);
  const double rsag = *s.projectedUs(host::localAllreduceAlgorithms()[1], 1 << 20);
  EXPECT_LT(rsag, direct);
}

// The cheapest applicable candidate by pricing every one, as the selector did on every call before it worked out
// its crossovers once.
Algorithm priced(const Selector& s, std::size_t bytes) {
  const AlgorithmDescriptor* best = nullptr;
  double bestUs = 0;
  for (const AlgorithmDescriptor& a : s.candidates()) {
    if (bytes < a.minBytes || bytes > a.maxBytes || s.machine().ranks < a.minRanks) continue;
    const double us = *s.projectedUs(a, bytes);
    if (best == nullptr || us < bestUs) best = &a, bestUs = us;
  }
  return best->id;
}

TEST(Selector, TheCrossoversItWorksOutAreThoseOfPricingEverySize) {
  std::mt19937_64 random(7);
  for (int ranks : {2, 3, 4, 8, 16, 64}) {
    for (int cores : {2, 16}) {
      const Selector s = hostSelector(ranks, cores);
      ASSERT_FALSE(s.crossovers().empty());
      EXPECT_EQ(s.crossovers().back().upTo, std::numeric_limits<std::size_t>::max());
      for (const Selector::Range& r : s.crossovers()) {
        // On both sides of every crossover, and at it.
        for (std::size_t b : {r.upTo - 1, r.upTo, r.upTo + 1}) {
          if (r.upTo == std::numeric_limits<std::size_t>::max() && b != r.upTo - 1) continue;
          EXPECT_EQ(s.choose(b).algorithm->id, priced(s, b)) << ranks << " ranks, " << cores << " cores, " << b;
        }
      }
      for (int i = 0; i < 2000; ++i) {
        const std::size_t b = random() >> (random() % 64);
        EXPECT_EQ(s.choose(b).algorithm->id, priced(s, b)) << ranks << " ranks, " << cores << " cores, " << b;
      }
    }
  }
}

TEST(Selector, ChoosingAllocatesNothing) {
  if (!BRAID_COUNTS_ALLOCATIONS) GTEST_SKIP() << "a sanitizer owns operator new here";
  const Selector model = hostSelector(8, 16);
  const Selector forced = hostSelector(8, 16, settingsOf({{"BRAID_ALGO", "rsag"}}));
  const Selector measured = hostSelector(8, 16, settingsOf({{"BRAID_DIRECT_MAX_BYTES", "256K"}}));
  allocations = 0;
  countingAllocations = true;
  std::size_t picked = 0;
  for (std::size_t b = 1; b < (std::size_t{1} << 40); b = b * 3 + 1) {
    picked += static_cast<std::size_t>(model.choose(b).algorithm->id) +
              static_cast<std::size_t>(forced.choose(b).algorithm->id) +
              static_cast<std::size_t>(measured.choose(b).algorithm->id);
  }
  countingAllocations = false;
  EXPECT_EQ(allocations.load(), 0);
  EXPECT_GT(picked, 0u);
}

TEST(Selector, BetweenHostsTheSlowestNicBoundsWhatAStepMoves) {
  const auto overNics = [](int mbps) {
    return Selector(host::netAllreduceAlgorithms(), Machine{.ranks = 4, .link = Link::kTcp, .nicMbps = mbps},
                    settingsOf({}), Path::kHost);
  };
  const std::size_t bytes = std::size_t{16} << 20;
  const Selector loopback = netSelector(4);
  const AlgorithmDescriptor& ring = *loopback.choose(bytes).algorithm;
  ASSERT_EQ(ring.id, Algorithm::kTcpRing);
  // 1 Gbit/s moves 0.125 GB/s: over twenty times slower than loopback's measured rate.
  EXPECT_GT(*overNics(1000).projectedUs(ring, bytes), 20 * *loopback.projectedUs(ring, bytes));
  EXPECT_NE(overNics(1000).explain(bytes).find("slowest rank's NICs, 1000 Mbit/s"), std::string::npos);
  // NICs faster than what loopback measured do not make a step faster than that.
  EXPECT_DOUBLE_EQ(*overNics(400000).projectedUs(ring, bytes), *loopback.projectedUs(ring, bytes));
  EXPECT_EQ(overNics(400000).explain(bytes).find("NICs"), std::string::npos);
}

TEST(Selector, SharedMemoryRanksOnSeveralNumaNodesAreSaidToBe) {
  const Selector spread(host::localAllreduceAlgorithms(),
                        Machine{.ranks = 8, .usableCpus = 16, .link = Link::kShm, .numaNodes = 2}, settingsOf({}),
                        Path::kHost);
  EXPECT_NE(spread.explain(1 << 20).find("span 2 NUMA nodes"), std::string::npos) << spread.explain(1 << 20);
  EXPECT_EQ(hostSelector(8, 16).explain(1 << 20).find("NUMA"), std::string::npos);
}

}  // namespace
}  // namespace braid::tuning
