// The schedules are checked by simulating them on every world size 1..64 and every rank and root:
// each rank's partial result is a vector counting how many times each rank's contribution is in it,
// so a schedule is right when every rank ends with every contribution exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "algorithms/patterns/halving_doubling.hpp"
#include "algorithms/patterns/pairwise.hpp"
#include "algorithms/patterns/partition.hpp"
#include "algorithms/patterns/ring.hpp"
#include "algorithms/patterns/tree.hpp"

namespace braid::patterns {
namespace {

constexpr int kMaxRanks = 64;

// counts[c]: how many times rank c's contribution is in a partial result.
using Counts = std::vector<int>;

Counts contributionOf(int rank, int size) {
  Counts c(static_cast<std::size_t>(size), 0);
  c[static_cast<std::size_t>(rank)] = 1;
  return c;
}

void accumulate(Counts& into, const Counts& from) {
  for (std::size_t i = 0; i < into.size(); ++i) into[i] += from[i];
}

bool isComplete(const Counts& c) {
  return std::all_of(c.begin(), c.end(), [](int n) { return n == 1; });
}

// Computed by counting, not with the library's bit tricks.
int ceilLog2ByCounting(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

int floorPowerOfTwoByCounting(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

template <typename F>
void expectInvalidArgument(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected InvalidArgument mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos) << "'" << needle << "' not in: " << e.what();
  }
}

// ---------------------------------------------------------------------------------------------------------
// partition

const std::vector<std::size_t> kTotals = {0, 1, 7, 1023, (std::size_t{1} << 20) + 3};

TEST(Partition, BlockOfCoversExactlyWithSizesWithinOne) {
  for (std::size_t total : kTotals) {
    for (int n = 1; n <= kMaxRanks; ++n) {
      std::size_t expectedOffset = 0, smallest = std::numeric_limits<std::size_t>::max(), largest = 0;
      for (int i = 0; i < n; ++i) {
        const Block b = blockOf(total, n, i);
        ASSERT_EQ(b.offset, expectedOffset) << "total=" << total << " n=" << n << " i=" << i;
        expectedOffset = b.end();
        smallest = std::min(smallest, b.count);
        largest = std::max(largest, b.count);
        // The larger blocks come first.
        if (i > 0) {
          EXPECT_LE(b.count, blockOf(total, n, i - 1).count);
        }
      }
      EXPECT_EQ(expectedOffset, total) << "total=" << total << " n=" << n;
      EXPECT_LE(largest - smallest, 1u) << "total=" << total << " n=" << n;
    }
  }
}

TEST(Partition, AlignedBlockOfStartsAlignedAndCoversExactly) {
  for (std::size_t total : kTotals) {
    for (int n = 1; n <= kMaxRanks; ++n) {
      for (std::size_t align : {1u, 3u, 4u, 16u, 64u, 4096u}) {
        std::size_t expectedOffset = 0, fewestUnits = std::numeric_limits<std::size_t>::max(), mostUnits = 0;
        for (int i = 0; i < n; ++i) {
          const Block b = alignedBlockOf(total, n, i, align);
          ASSERT_EQ(b.offset, expectedOffset) << "total=" << total << " n=" << n << " align=" << align << " i=" << i;
          EXPECT_TRUE(b.offset % align == 0 || b.offset == total) << "offset " << b.offset << " align " << align;
          expectedOffset = b.end();
          // Fair in units of alignment: a block's share rounds up only for the partial last unit.
          const std::size_t units = (b.count + align - 1) / align;
          fewestUnits = std::min(fewestUnits, units);
          mostUnits = std::max(mostUnits, units);
        }
        EXPECT_EQ(expectedOffset, total) << "total=" << total << " n=" << n << " align=" << align;
        EXPECT_LE(mostUnits - fewestUnits, 1u) << "total=" << total << " n=" << n << " align=" << align;
      }
    }
  }
}

TEST(Partition, AlignedBlockOfWithAlignmentOneIsBlockOf) {
  for (std::size_t total : kTotals) {
    for (int n = 1; n <= kMaxRanks; ++n) {
      for (int i = 0; i < n; ++i) EXPECT_EQ(alignedBlockOf(total, n, i, 1), blockOf(total, n, i));
    }
  }
}

TEST(Partition, HugeTotalsDoNotOverflow) {
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  for (int n : {1, 3, 7, 64}) {
    std::size_t end = 0, alignedEnd = 0;
    for (int i = 0; i < n; ++i) {
      const Block b = blockOf(huge, n, i);
      EXPECT_EQ(b.offset, end);
      end = b.end();
      const Block a = alignedBlockOf(huge, n, i, 4096);
      EXPECT_EQ(a.offset, alignedEnd);
      EXPECT_TRUE(a.offset % 4096 == 0 || a.offset == huge);
      alignedEnd = a.end();
    }
    EXPECT_EQ(end, huge);
    EXPECT_EQ(alignedEnd, huge);
  }
}

TEST(Partition, ChunkCount) {
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(chunkCount(0, 1), 0u);
  EXPECT_EQ(chunkCount(0, 5), 0u);
  EXPECT_EQ(chunkCount(1, 5), 1u);
  EXPECT_EQ(chunkCount(5, 5), 1u);
  EXPECT_EQ(chunkCount(6, 5), 2u);
  EXPECT_EQ(chunkCount(huge, 1), huge);
  EXPECT_EQ(chunkCount(huge, 2), huge / 2 + 1);
  EXPECT_EQ(chunkCount(huge, huge), 1u);
  EXPECT_EQ(chunkCount(huge - 1, huge), 1u);
  expectInvalidArgument([] { chunkCount(10, 0); }, "chunk size 0");
}

TEST(Partition, InvalidArgumentsNameTheValue) {
  expectInvalidArgument([] { blockOf(10, 0, 0); }, "nblocks 0");
  expectInvalidArgument([] { blockOf(10, 4, 4); }, "block index 4 out of range for 4 blocks");
  expectInvalidArgument([] { blockOf(10, 4, -1); }, "block index -1");
  expectInvalidArgument([] { alignedBlockOf(10, 4, 0, 0); }, "alignment 0");
  expectInvalidArgument([] { alignedBlockOf(10, -2, 0, 8); }, "nblocks -2");
}

// ---------------------------------------------------------------------------------------------------------
// ring

std::vector<int> shuffledOrder(int n) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(static_cast<unsigned>(n) * 7919u);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

std::vector<Ring> makeRings(int n, bool shuffled) {
  std::vector<Ring> rings;
  const std::vector<int> order = shuffledOrder(n);
  for (int r = 0; r < n; ++r) rings.push_back(shuffled ? Ring::withOrder(r, order) : Ring(r, n));
  return rings;
}

// Runs reduce-scatter then allgather with every rank's message of a step computed from the state before it.
void simulateRingAllreduce(const std::vector<Ring>& rings) {
  const int n = static_cast<int>(rings.size());
  const auto un = static_cast<std::size_t>(n);
  // data[r][b]: rank r's partial result for block b.
  std::vector<std::vector<Counts>> data(un);
  for (int r = 0; r < n; ++r) data[static_cast<std::size_t>(r)].assign(un, contributionOf(r, n));

  for (int r = 0; r < n; ++r) {
    const Ring& ring = rings[static_cast<std::size_t>(r)];
    ASSERT_EQ(ring.steps(), n - 1);
    ASSERT_EQ(ring.rankAt(ring.position()), r);
    ASSERT_EQ(rings[static_cast<std::size_t>(ring.next())].prev(), r) << "n=" << n << " r=" << r;
    ASSERT_EQ(ring.ownedBlockAfterReduceScatter(), r);
  }

  struct Message {
    int to;
    int block;
    Counts payload;
  };
  for (int s = 0; s < n - 1; ++s) {
    std::vector<Message> messages;
    std::vector<int> received(un, 0);
    for (int r = 0; r < n; ++r) {
      const Ring& ring = rings[static_cast<std::size_t>(r)];
      const int block = ring.reduceScatterSendBlock(s);
      const int to = ring.next();
      ASSERT_EQ(rings[static_cast<std::size_t>(to)].reduceScatterRecvBlock(s), block)
          << "n=" << n << " step " << s << ": " << r << " sends a block " << to << " does not expect";
      messages.push_back({to, block, data[static_cast<std::size_t>(r)][static_cast<std::size_t>(block)]});
      ++received[static_cast<std::size_t>(to)];
    }
    for (int count : received) ASSERT_EQ(count, 1) << "n=" << n << " step " << s;
    for (const Message& m : messages) {
      accumulate(data[static_cast<std::size_t>(m.to)][static_cast<std::size_t>(m.block)], m.payload);
    }
  }
  for (int r = 0; r < n; ++r) {
    const int owned = rings[static_cast<std::size_t>(r)].ownedBlockAfterReduceScatter();
    ASSERT_TRUE(isComplete(data[static_cast<std::size_t>(r)][static_cast<std::size_t>(owned)]))
        << "n=" << n << ": rank " << r << " does not hold block " << owned << " reduced exactly once per rank";
  }

  // Allgather: a rank forwards only blocks it holds complete and never receives one it already has.
  std::vector<std::vector<bool>> has(un, std::vector<bool>(un, false));
  for (int r = 0; r < n; ++r) has[static_cast<std::size_t>(r)][static_cast<std::size_t>(r)] = true;
  for (int s = 0; s < n - 1; ++s) {
    std::vector<Message> messages;
    for (int r = 0; r < n; ++r) {
      const Ring& ring = rings[static_cast<std::size_t>(r)];
      const int block = ring.allgatherSendBlock(s);
      const int to = ring.next();
      ASSERT_TRUE(has[static_cast<std::size_t>(r)][static_cast<std::size_t>(block)])
          << "n=" << n << " step " << s << ": rank " << r << " forwards block " << block << " it lacks";
      ASSERT_EQ(rings[static_cast<std::size_t>(to)].allgatherRecvBlock(s), block);
      ASSERT_FALSE(has[static_cast<std::size_t>(to)][static_cast<std::size_t>(block)])
          << "n=" << n << " step " << s << ": rank " << to << " receives block " << block << " twice";
      messages.push_back({to, block, data[static_cast<std::size_t>(r)][static_cast<std::size_t>(block)]});
    }
    for (Message& m : messages) {
      data[static_cast<std::size_t>(m.to)][static_cast<std::size_t>(m.block)] = std::move(m.payload);
      has[static_cast<std::size_t>(m.to)][static_cast<std::size_t>(m.block)] = true;
    }
  }
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b) {
      ASSERT_TRUE(isComplete(data[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)]))
          << "n=" << n << ": rank " << r << " block " << b << " incomplete after allgather";
    }
  }
}

TEST(Ring, ReduceScatterThenAllgatherReducesEveryContributionOnce) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    SCOPED_TRACE(n);
    simulateRingAllreduce(makeRings(n, false));
  }
}

TEST(Ring, CustomOrderKeepsOwnershipAndReducesOnce) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    SCOPED_TRACE(n);
    const std::vector<Ring> rings = makeRings(n, true);
    const std::vector<int> order = shuffledOrder(n);
    for (int r = 0; r < n; ++r) {
      const Ring& ring = rings[static_cast<std::size_t>(r)];
      EXPECT_EQ(ring.order(), order);
      EXPECT_EQ(order[static_cast<std::size_t>(ring.position())], r);
      EXPECT_EQ(ring.next(), order[static_cast<std::size_t>((ring.position() + 1) % n)]);
    }
    simulateRingAllreduce(rings);
  }
}

TEST(Ring, DefaultOrderNeighbours) {
  const Ring ring(0, 5);
  EXPECT_EQ(ring.next(), 1);
  EXPECT_EQ(ring.prev(), 4);
  EXPECT_EQ(ring.position(), 0);
  const Ring single(0, 1);
  EXPECT_EQ(single.next(), 0);
  EXPECT_EQ(single.prev(), 0);
  EXPECT_EQ(single.steps(), 0);
}

TEST(Ring, InvalidArgumentsNameTheValue) {
  expectInvalidArgument([] { Ring(4, 4); }, "rank 4 out of range for 4 ranks");
  expectInvalidArgument([] { Ring(-1, 4); }, "rank -1");
  expectInvalidArgument([] { Ring(0, 0); }, "size 0");
  expectInvalidArgument([] { Ring::withOrder(0, {}); }, "size 0");
  expectInvalidArgument([] { Ring::withOrder(0, {0, 1, 1}); }, "rank 1 twice");
  expectInvalidArgument([] { Ring::withOrder(0, {0, 3, 1}); }, "entry 3 out of range for 3 ranks");
  expectInvalidArgument([] { Ring::withOrder(3, {0, 2, 1}); }, "rank 3 out of range for 3 ranks");
  expectInvalidArgument([] { Ring(0, 4).reduceScatterSendBlock(3); }, "step 3");
  expectInvalidArgument([] { Ring(0, 4).allgatherRecvBlock(-1); }, "step -1");
  expectInvalidArgument([] { Ring(0, 1).reduceScatterRecvBlock(0); }, "step 0");
}

// ---------------------------------------------------------------------------------------------------------
// binomial tree

std::vector<BinomialTree> makeTrees(int n, int root) {
  std::vector<BinomialTree> trees;
  for (int r = 0; r < n; ++r) trees.emplace_back(r, n, root);
  return trees;
}

TEST(BinomialTree, BroadcastReachesEveryRankOnceWithinCeilLog2Rounds) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    const int bound = ceilLog2ByCounting(n);
    for (int root = 0; root < n; ++root) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " root=" << root);
      const std::vector<BinomialTree> trees = makeTrees(n, root);
      // One-port model: a rank sends to one child per round, in children() order, starting the round
      // after it received; a child can forward from the round after that.
      std::vector<int> reached(static_cast<std::size_t>(n), 0);
      std::vector<int> round(static_cast<std::size_t>(n), -1);
      std::vector<int> pending = {root};
      reached[static_cast<std::size_t>(root)] = 1;
      round[static_cast<std::size_t>(root)] = 0;
      while (!pending.empty()) {
        const int r = pending.back();
        pending.pop_back();
        const BinomialTree& tree = trees[static_cast<std::size_t>(r)];
        int sendRound = round[static_cast<std::size_t>(r)];
        for (int child : tree.children()) {
          ASSERT_GE(child, 0);
          ASSERT_LT(child, n);
          ASSERT_EQ(trees[static_cast<std::size_t>(child)].parent(), r) << "child " << child << " of " << r;
          ASSERT_EQ(trees[static_cast<std::size_t>(child)].depth(), tree.depth() + 1);
          ASSERT_EQ(++reached[static_cast<std::size_t>(child)], 1) << "rank " << child << " reached twice";
          round[static_cast<std::size_t>(child)] = ++sendRound;
          pending.push_back(child);
        }
      }
      for (int r = 0; r < n; ++r) {
        const BinomialTree& tree = trees[static_cast<std::size_t>(r)];
        EXPECT_EQ(reached[static_cast<std::size_t>(r)], 1) << "rank " << r << " not reached";
        EXPECT_LE(round[static_cast<std::size_t>(r)], bound) << "rank " << r << " reached late";
        EXPECT_LE(tree.depth(), bound);
        EXPECT_EQ(tree.height(), bound);
        EXPECT_EQ(tree.root(), root);
        EXPECT_EQ(tree.rankOfRelative(tree.relativeRank()), r);
        EXPECT_EQ(r == root, tree.parent() == -1);
        EXPECT_EQ(r == root, tree.depth() == 0);
        if (r != root) {
          const auto& siblings = trees[static_cast<std::size_t>(tree.parent())].children();
          EXPECT_EQ(std::count(siblings.begin(), siblings.end(), r), 1) << "parent of " << r << " disowns it";
        }
      }
    }
  }
}

TEST(BinomialTree, SubtreesAreContiguousRelativeRangesAndSizesSum) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    for (int root = 0; root < n; ++root) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " root=" << root);
      const std::vector<BinomialTree> trees = makeTrees(n, root);
      const BinomialTree& rootTree = trees[static_cast<std::size_t>(root)];
      // Gather, leaves first: each rank sends its parent the relative blocks its subtree holds, which must
      // be the contiguous range [relativeRank, relativeRank + subtreeSize).
      std::vector<std::vector<int>> blocks(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r) blocks[static_cast<std::size_t>(r)] = {rootTree.relativeRank(r)};
      std::vector<int> byDepth(static_cast<std::size_t>(n));
      std::iota(byDepth.begin(), byDepth.end(), 0);
      std::stable_sort(byDepth.begin(), byDepth.end(), [&](int a, int b) {
        return trees[static_cast<std::size_t>(a)].depth() > trees[static_cast<std::size_t>(b)].depth();
      });
      for (int r : byDepth) {
        const BinomialTree& tree = trees[static_cast<std::size_t>(r)];
        std::vector<int>& mine = blocks[static_cast<std::size_t>(r)];
        std::sort(mine.begin(), mine.end());
        const int first = tree.relativeRank();
        std::vector<int> expected(static_cast<std::size_t>(tree.subtreeSize()));
        std::iota(expected.begin(), expected.end(), first);
        ASSERT_EQ(mine, expected) << "subtree of rank " << r;
        EXPECT_EQ(rootTree.subtreeSize(r), tree.subtreeSize());
        int sum = 1, previous = n;
        for (int child : tree.children()) {
          const int size = tree.subtreeSize(child);
          EXPECT_LE(size, previous) << "children of " << r << " not largest subtree first";
          previous = size;
          sum += size;
        }
        EXPECT_EQ(sum, tree.subtreeSize()) << "rank " << r;
        if (r != root) {
          auto& parentBlocks = blocks[static_cast<std::size_t>(tree.parent())];
          parentBlocks.insert(parentBlocks.end(), mine.begin(), mine.end());
        }
      }
      EXPECT_EQ(rootTree.subtreeSize(), n);
      EXPECT_EQ(blocks[static_cast<std::size_t>(root)].size(), static_cast<std::size_t>(n));
    }
  }
}

TEST(BinomialTree, InvalidArgumentsNameTheValue) {
  expectInvalidArgument([] { BinomialTree(0, 4, 5); }, "root 5 out of range for 4 ranks");
  expectInvalidArgument([] { BinomialTree(0, 4, -1); }, "root -1 out of range for 4 ranks");
  expectInvalidArgument([] { BinomialTree(4, 4, 0); }, "rank 4 out of range for 4 ranks");
  expectInvalidArgument([] { BinomialTree(0, 0, 0); }, "size 0");
  expectInvalidArgument([] { BinomialTree(0, 4, 0).subtreeSize(7); }, "rank 7");
  expectInvalidArgument([] { BinomialTree(0, 4, 0).rankOfRelative(4); }, "relative rank 4");
}

// ---------------------------------------------------------------------------------------------------------
// halving-doubling

std::vector<int> blocksIn(const BlockRange& range) {
  std::vector<int> out(static_cast<std::size_t>(range.count));
  std::iota(out.begin(), out.end(), range.first);
  return out;
}

TEST(HalvingDoubling, AllreduceCountsEveryContributionOnceFoldedRanksIncluded) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    SCOPED_TRACE(testing::Message() << "n=" << n);
    const int p = floorPowerOfTwoByCounting(n);
    const auto un = static_cast<std::size_t>(n);
    const auto up = static_cast<std::size_t>(p);
    std::vector<HalvingDoubling> hd;
    for (int r = 0; r < n; ++r) hd.emplace_back(r, n);
    auto at = [&](int r) -> const HalvingDoubling& { return hd[static_cast<std::size_t>(r)]; };

    // data[r][b]: rank r's partial result for block b of p; live[r][b]: whether r still holds block b.
    std::vector<std::vector<Counts>> data(un);
    std::vector<std::vector<bool>> live(un, std::vector<bool>(up, true));
    for (int r = 0; r < n; ++r) data[static_cast<std::size_t>(r)].assign(up, contributionOf(r, n));

    // Fold in.
    int folded = 0;
    std::vector<int> active;
    for (int r = 0; r < n; ++r) {
      const HalvingDoubling& h = at(r);
      ASSERT_EQ(h.powerOfTwo(), p);
      ASSERT_EQ(h.steps(), ceilLog2ByCounting(p));
      const int partner = h.foldPartner();
      if (partner >= 0) {
        ASSERT_LT(partner, n);
        ASSERT_EQ(at(partner).foldPartner(), r) << "fold partners not mutual";
        ASSERT_NE(at(partner).foldedOut(), h.foldedOut()) << "a fold pairs a folded rank with an active one";
      }
      if (h.foldedOut()) {
        ++folded;
        ASSERT_GE(partner, 0) << "folded rank " << r << " has no partner";
        ASSERT_EQ(h.virtualRank(), -1);
        for (std::size_t b = 0; b < up; ++b) {
          accumulate(data[static_cast<std::size_t>(partner)][b], data[static_cast<std::size_t>(r)][b]);
        }
      } else {
        ASSERT_EQ(h.rankOfVirtual(h.virtualRank()), r);
        active.push_back(r);
      }
    }
    ASSERT_EQ(folded, n - p);
    ASSERT_EQ(active.size(), up);

    // Halving: send one part of what is live, keep and reduce the rest.
    for (int k = 0; k < at(0).steps(); ++k) {
      std::vector<std::vector<Counts>> before = data;
      std::vector<std::vector<bool>> liveBefore = live;
      for (int r : active) {
        const ExchangeStep step = at(r).halvingStep(k);
        ASSERT_TRUE(step.peer >= 0 && step.peer < n && !at(step.peer).foldedOut()) << "bad peer " << step.peer;
        const ExchangeStep theirs = at(step.peer).halvingStep(k);
        ASSERT_EQ(theirs.peer, r);
        ASSERT_EQ(theirs.send, step.recv) << "rank " << r << " step " << k;
        ASSERT_EQ(theirs.recv, step.send) << "rank " << r << " step " << k;
        ASSERT_EQ(step.send.count, step.recv.count);
        auto& myLive = live[static_cast<std::size_t>(r)];
        for (int b : blocksIn(step.send)) {
          ASSERT_TRUE(liveBefore[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)]) << "sends dead block";
          myLive[static_cast<std::size_t>(b)] = false;
        }
        for (int b : blocksIn(step.recv)) {
          ASSERT_TRUE(liveBefore[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)]) << "keeps dead block";
          accumulate(data[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)],
                     before[static_cast<std::size_t>(step.peer)][static_cast<std::size_t>(b)]);
        }
      }
    }
    std::vector<int> owners(up, -1);
    for (int r : active) {
      const int owned = at(r).ownedBlock();
      ASSERT_TRUE(owned >= 0 && owned < p);
      ASSERT_EQ(owners[static_cast<std::size_t>(owned)], -1) << "block " << owned << " owned twice";
      owners[static_cast<std::size_t>(owned)] = r;
      EXPECT_EQ(at(0).ownerOfBlock(owned), at(r).virtualRank());
      for (int b = 0; b < p; ++b) {
        ASSERT_EQ(live[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)], b == owned)
            << "rank " << r << " holds block " << b << " after halving";
      }
      ASSERT_TRUE(isComplete(data[static_cast<std::size_t>(r)][static_cast<std::size_t>(owned)]))
          << "rank " << r << " block " << owned << " not reduced exactly once per rank";
    }

    // Doubling: send only complete blocks, never receive one already held.
    std::vector<std::vector<bool>> has(un, std::vector<bool>(up, false));
    for (int r : active) has[static_cast<std::size_t>(r)][static_cast<std::size_t>(at(r).ownedBlock())] = true;
    for (int k = 0; k < at(0).steps(); ++k) {
      std::vector<std::vector<Counts>> before = data;
      std::vector<std::vector<bool>> hadBefore = has;
      for (int r : active) {
        const ExchangeStep step = at(r).doublingStep(k);
        const ExchangeStep theirs = at(step.peer).doublingStep(k);
        ASSERT_EQ(theirs.peer, r);
        ASSERT_EQ(theirs.send, step.recv);
        ASSERT_EQ(theirs.recv, step.send);
        for (int b : blocksIn(step.send)) {
          ASSERT_TRUE(hadBefore[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)]) << "sends missing block";
        }
        for (int b : blocksIn(step.recv)) {
          ASSERT_FALSE(hadBefore[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)]) << "receives block twice";
          data[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)] =
              before[static_cast<std::size_t>(step.peer)][static_cast<std::size_t>(b)];
          has[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)] = true;
        }
      }
    }

    // Unfold: folded ranks receive the whole result from their partner.
    for (int r = 0; r < n; ++r) {
      if (at(r).foldedOut()) data[static_cast<std::size_t>(r)] = data[static_cast<std::size_t>(at(r).foldPartner())];
    }
    for (int r = 0; r < n; ++r) {
      for (int b = 0; b < p; ++b) {
        ASSERT_TRUE(isComplete(data[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)]))
            << "rank " << r << " block " << b << " incomplete at the end";
      }
    }
  }
}

TEST(HalvingDoubling, FirstExchangeIsWithTheNearestRank) {
  // The largest exchange (half the buffer) goes to rank xor 1, usually on the same node.
  const HalvingDoubling h(6, 8);
  EXPECT_EQ(h.halvingStep(0).peer, 7);
  EXPECT_EQ(h.halvingStep(0).send.count, 4);
  EXPECT_EQ(h.doublingStep(h.steps() - 1).peer, 7);
}

TEST(HalvingDoubling, InvalidArgumentsNameTheValue) {
  expectInvalidArgument([] { HalvingDoubling(6, 6); }, "rank 6 out of range for 6 ranks");
  expectInvalidArgument([] { HalvingDoubling(0, 0); }, "size 0");
  expectInvalidArgument([] { HalvingDoubling(5, 6).halvingStep(0); }, "rank 5 of 6 is folded out");
  expectInvalidArgument([] { HalvingDoubling(5, 6).ownedBlock(); }, "folded out");
  expectInvalidArgument([] { HalvingDoubling(1, 6).halvingStep(2); }, "step 2");
  expectInvalidArgument([] { HalvingDoubling(1, 6).doublingStep(-1); }, "step -1");
  expectInvalidArgument([] { HalvingDoubling(1, 6).rankOfVirtual(4); }, "virtual rank 4");
  expectInvalidArgument([] { HalvingDoubling(1, 6).ownerOfBlock(4); }, "block 4");
}

// ---------------------------------------------------------------------------------------------------------
// pairwise alltoall

// Over all steps every ordered pair (r, q), r != q, must exchange exactly once, and within a step every
// send must be matched by the receiver expecting it.
template <typename StepFn>
void checkAlltoallSchedule(int n, StepFn stepOf) {
  const auto un = static_cast<std::size_t>(n);
  std::vector<std::vector<int>> sent(un, std::vector<int>(un, 0));
  ASSERT_EQ(pairwiseSteps(n), n - 1);
  for (int s = 1; s < n; ++s) {
    std::vector<int> receives(un, 0);
    for (int r = 0; r < n; ++r) {
      const PairwiseStep step = stepOf(r, s);
      ASSERT_TRUE(step.sendTo >= 0 && step.sendTo < n && step.sendTo != r) << "n=" << n << " r=" << r;
      ASSERT_TRUE(step.recvFrom >= 0 && step.recvFrom < n && step.recvFrom != r) << "n=" << n << " r=" << r;
      ASSERT_EQ(stepOf(step.sendTo, s).recvFrom, r) << "n=" << n << " step " << s << ": " << r << " -> " << step.sendTo;
      ASSERT_EQ(stepOf(step.recvFrom, s).sendTo, r) << "n=" << n << " step " << s;
      ++sent[static_cast<std::size_t>(r)][static_cast<std::size_t>(step.sendTo)];
      ++receives[static_cast<std::size_t>(step.sendTo)];
    }
    for (int count : receives) ASSERT_EQ(count, 1) << "n=" << n << " step " << s;
  }
  for (int r = 0; r < n; ++r) {
    for (int q = 0; q < n; ++q) {
      EXPECT_EQ(sent[static_cast<std::size_t>(r)][static_cast<std::size_t>(q)], r == q ? 0 : 1)
          << "n=" << n << ": " << r << " -> " << q;
    }
  }
}

TEST(Pairwise, ShiftedExchangeCoversEveryOrderedPairOnce) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    checkAlltoallSchedule(n, [n](int r, int s) { return pairwiseStep(r, n, s); });
  }
}

TEST(Pairwise, XorExchangeCoversEveryOrderedPairOnceInDisjointPairs) {
  for (int n = 1; n <= kMaxRanks; n *= 2) {
    checkAlltoallSchedule(n, [n](int r, int s) {
      const PairwiseStep step = xorStep(r, n, s);
      EXPECT_EQ(step.sendTo, step.recvFrom);
      return step;
    });
  }
}

TEST(Pairwise, InvalidArgumentsNameTheValue) {
  expectInvalidArgument([] { pairwiseStep(0, 4, 0); }, "step 0");
  expectInvalidArgument([] { pairwiseStep(0, 4, 4); }, "step 4");
  expectInvalidArgument([] { pairwiseStep(4, 4, 1); }, "rank 4 out of range for 4 ranks");
  expectInvalidArgument([] { pairwiseSteps(0); }, "size 0");
  expectInvalidArgument([] { xorStep(0, 6, 1); }, "not 6");
  expectInvalidArgument([] { xorStep(0, 8, 8); }, "step 8");
}

}  // namespace
}  // namespace braid::patterns
