// The hierarchical allreduce as an algorithm of two engines, with thread ranks: every "host" and every group of equal
// local rank is an in-memory group of its own, so the composition (shards, the tail, each level's numbering of its
// calls, the levels' own rank numbers, which a wrapper of each level checks) is tested without processes or sockets.
// The process ranks over shared memory and TCP are in tests/multirank/host_id_test.cpp.
#include "algorithms/hierarchical_allreduce.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "core/engine_stack.hpp"
#include "support/rank_runner.hpp"
#include "transport/local_fabric.hpp"
#include "transport/memory/memory_local_group.hpp"

namespace braid {
namespace {

// `hosts` hosts of `perHost` ranks; rank r on host hostOf(r): in blocks, or dealt round-robin so that a level's
// rank order is not the communicator's.
struct Layout {
  int hosts;
  int perHost;
  bool dealt;

  int ranks() const { return hosts * perHost; }
  int hostOf(int r) const { return dealt ? r % hosts : r / perHost; }
};

// Each rank's two levels, as core::Hierarchy::make lays them out.
std::vector<HierarchyPlace> placesOf(const Layout& l) {
  std::vector<HierarchyPlace> places(static_cast<std::size_t>(l.ranks()));
  for (int me = 0; me < l.ranks(); ++me) {
    std::vector<int> seen(static_cast<std::size_t>(l.hosts), 0);
    int myLocal = -1;
    for (int r = 0; r <= me; ++r) {
      const int local = seen[static_cast<std::size_t>(l.hostOf(r))]++;
      if (r == me) myLocal = local;
    }
    std::fill(seen.begin(), seen.end(), 0);
    HierarchyPlace& p = places[static_cast<std::size_t>(me)];
    for (int r = 0; r < l.ranks(); ++r) {
      const int local = seen[static_cast<std::size_t>(l.hostOf(r))]++;
      if (l.hostOf(r) == l.hostOf(me)) {
        if (r == me) p.inside.mine = p.inside.size();
        p.inside.ranks.push_back(r);
      }
      if (local == myLocal) {
        if (r == me) p.between.mine = p.between.size();
        p.between.ranks.push_back(r);
      }
    }
  }
  return places;
}

// One arena per group, keyed by its lowest rank: each rank's engine of that level views the same memory.
class Arenas {
 public:
  explicit Arenas(int ranks) : arenas_(static_cast<std::size_t>(ranks)) {}

  std::unique_ptr<Engine> engineFor(const HierarchyLevel& level, const Settings& s) {
    std::shared_ptr<transport::MemoryArena>& arena = arenas_[static_cast<std::size_t>(level.ranks.front())];
    const core::HostLayout host{.ranks = level.size(), .cpus = 64, .shmBytes = std::uint64_t{1} << 40};
    const auto layout = core::localFabricLayout(level.size(), s, host);
    std::call_once(made_[static_cast<std::size_t>(level.ranks.front())],
                   [&] { arena = std::make_shared<transport::MemoryArena>(level.size(), layout.regionBytes); });
    return core::makeLocalEngine(level.size(), std::make_unique<transport::MemoryLocalGroup>(arena, level.mine), s,
                                 host);
  }

 private:
  std::vector<std::shared_ptr<transport::MemoryArena>> arenas_;
  std::once_flag made_[64];
};

// An engine's collectives as a level sees them: each call must carry this rank's rank among the level's ranks (some
// engines read it from there) and the next number of the level's own sequence (the network engine's wire tag). Each
// call also acts as one that had to sleep: it sets the call's deadline when none is set yet, and the deadline every
// call saw is kept, so that a test can check that one allreduce's steps share one.
class Numbered final : public Collectives {
 public:
  Numbered(Collectives& inner, int rank) : inner_(inner), rank_(rank) {}

  void run(const CallArgs& call, const OpEnv& env) override { inner_.run(call, checked(env)); }

  std::int64_t calls() const { return next_; }
  /// The deadlines the calls since the last take saw, and forgets them.
  std::vector<Deadline::Clock::time_point> takeDeadlines() { return std::exchange(deadlines_, {}); }

 private:
  const OpEnv& checked(const OpEnv& env) {
    if (env.context.rank != rank_ || env.context.seq != next_) {
      throw std::runtime_error(strCat("a level's call came as rank ", env.context.rank, " #", env.context.seq,
                                      ", not rank ", rank_, " #", next_));
    }
    ++next_;
    if (!env.deadline) env.deadline = Deadline::after(env.timeoutSeconds);
    deadlines_.push_back(env.deadline->at());
    return env;
  }

  Collectives& inner_;
  const int rank_;
  std::int64_t next_ = 0;
  std::vector<Deadline::Clock::time_point> deadlines_;
};

OpEnv envFor(int rank, std::int64_t seq) {
  OpEnv env;
  env.context = CallContext{.rank = rank, .peer = -1, .op = "allreduce", .seq = seq};
  env.timeoutSeconds = 60;
  return env;
}

class HierarchicalAllreduceThreads : public ::testing::TestWithParam<Layout> {};

TEST_P(HierarchicalAllreduceThreads, ExactSumsAndTheSameBitsOnEveryRank) {
  const Layout layout = GetParam();
  const int n = layout.ranks();
  const auto places = placesOf(layout);
  const Settings settings = testing::testSettings();
  Arenas inside(n), between(n);
  // Counts: one element and fewer than the local ranks (the tail alone), uneven (shards and a tail), larger.
  const std::vector<std::size_t> counts = {1, 2, 7, 4099, std::size_t{1} << 16};
  std::vector<std::vector<std::vector<float>>> floats(counts.size(), std::vector<std::vector<float>>(n));
  std::vector<std::string> failures(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        const HierarchyPlace& place = places[static_cast<std::size_t>(r)];
        auto insideEngine = inside.engineFor(place.inside, settings);
        auto betweenEngine = between.engineFor(place.between, settings);
        Numbered in(*insideEngine, place.inside.mine), across(*betweenEngine, place.between.mine);
        HierarchicalAllreduce algorithm(place);
        // One deadline for a whole call, set by its first step that slept: one timeout in all, not one a step.
        const auto oneDeadline = [&](const OpEnv& env) {
          for (Numbered* level : {&in, &across}) {
            for (const auto& at : level->takeDeadlines()) {
              if (!env.deadline || at != env.deadline->at()) throw std::runtime_error("a step had its own deadline");
            }
          }
        };
        std::int64_t seq = 0;
        for (std::size_t c = 0; c < counts.size(); ++c) {
          const std::size_t count = counts[c];
          std::vector<std::int64_t> ints(count), out(count, -1);
          for (std::size_t i = 0; i < count; ++i) ints[i] = static_cast<std::int64_t>(i) * (r + 1) - 3;
          const OpEnv env = envFor(r, seq++);
          algorithm.run(in, across, ints.data(), out.data(), count, DataType::kInt64, ReduceKind::kSum, env);
          oneDeadline(env);
          for (std::size_t i = 0; i < count; ++i) {
            const std::int64_t want = static_cast<std::int64_t>(i) * n * (n + 1) / 2 - 3 * n;
            if (out[i] != want) {
              throw std::runtime_error(strCat("count ", count, ": element ", i, " is ", out[i], ", not ", want));
            }
          }
          std::vector<float>& f = floats[c][static_cast<std::size_t>(r)];
          f.resize(count);
          for (std::size_t i = 0; i < count; ++i) f[i] = 1.0f / static_cast<float>(i % 97 + r + 3);
          const OpEnv floatEnv = envFor(r, seq++);
          algorithm.run(in, across, f.data(), f.data(), count, DataType::kFloat32, ReduceKind::kSum, floatEnv);
          oneDeadline(floatEnv);
        }
        // Each allreduce of n elements over L local ranks: three steps when n >= L, and two more for a tail.
        std::int64_t insideCalls = 0, betweenCalls = 0;
        for (const std::size_t count : counts) {
          const auto localSize = static_cast<std::size_t>(place.inside.size());
          insideCalls += 2 * ((count >= localSize ? 2 : 0) + (count % localSize != 0 ? 1 : 0));
          betweenCalls += 2 * ((count >= localSize ? 1 : 0) + (count % localSize != 0 ? 1 : 0));
        }
        if (in.calls() != insideCalls || across.calls() != betweenCalls) {
          throw std::runtime_error(strCat("the levels ran ", in.calls(), " and ", across.calls(), " calls, not ",
                                          insideCalls, " and ", betweenCalls));
        }
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[static_cast<std::size_t>(r)], "") << "rank " << r;
  // Each shard is reduced once, between hosts, and handed to every rank: the same bits everywhere.
  for (std::size_t c = 0; c < counts.size(); ++c) {
    for (int r = 1; r < n; ++r) {
      EXPECT_EQ(std::memcmp(floats[c][0].data(), floats[c][static_cast<std::size_t>(r)].data(), counts[c] * 4), 0)
          << "count " << counts[c] << ": rank " << r << "'s floats differ from rank 0's";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierarchicalAllreduceThreads,
                         ::testing::Values(Layout{2, 2, false}, Layout{3, 2, true}, Layout{2, 3, false},
                                           Layout{2, 3, true}),
                         [](const auto& info) {
                           return strCat(info.param.hosts, "hosts_of_", info.param.perHost,
                                         info.param.dealt ? "_dealt" : "_blocks");
                         });

TEST(HierarchicalAllreduce, ComposesOnlyWhatReducesOnce) {
  EXPECT_TRUE(HierarchicalAllreduce::composes(ReduceKind::kSum));
  EXPECT_TRUE(HierarchicalAllreduce::composes(ReduceKind::kMax));
  EXPECT_FALSE(HierarchicalAllreduce::composes(ReduceKind::kAvg));
}

}  // namespace
}  // namespace braid
