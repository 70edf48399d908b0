// The partition, ring and tree schedules, checked by simulating them on every world size 1..64 and every rank and
// root (support/schedule_counts.hpp). Halving-doubling and the pairwise exchanges: patterns_exchange_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "algorithms/patterns/partition.hpp"
#include "algorithms/patterns/ring.hpp"
#include "algorithms/patterns/tree.hpp"
#include "support/schedule_counts.hpp"

namespace braid::patterns {
namespace {

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

// Passes cut into pieces map back onto what they run over exactly once, however the pieces fall.
TEST(Partition, APassAroundAGapCoversTheRangeLessTheGap) {
  for (const Block gap : {Block{0, 5}, Block{3, 4}, Block{10, 0}, Block{7, 3}}) {
    const std::size_t total = 10;
    for (std::size_t cut = 1; cut <= total - gap.count; ++cut) {
      std::vector<int> hits(total, 0);
      for (std::size_t b = 0; b < total - gap.count; b += cut) {
        aroundGap(b, std::min(b + cut, total - gap.count), gap, [&](std::size_t first, std::size_t last) {
          for (std::size_t i = first; i < last; ++i) ++hits[i];
        });
      }
      for (std::size_t i = 0; i < total; ++i) {
        EXPECT_EQ(hits[i], i >= gap.offset && i < gap.end() ? 0 : 1) << i << " gap " << gap.offset << "+" << gap.count;
      }
    }
  }
}

TEST(Partition, APassOverBlocksEndToEndNamesEachBlocksPart) {
  const std::size_t len = 4, blocks = 3;
  for (std::size_t cut = 1; cut <= len * blocks; ++cut) {
    std::vector<int> hits(len * blocks, 0);
    for (std::size_t b = 0; b < len * blocks; b += cut) {
      forEachBlockIn(b, std::min(b + cut, len * blocks), len,
                     [&](std::size_t block, std::size_t first, std::size_t last) {
                       ASSERT_LT(block, blocks);
                       ASSERT_LT(first, last);
                       ASSERT_LE(last, len);
                       for (std::size_t i = first; i < last; ++i) ++hits[block * len + i];
                     });
    }
    for (int h : hits) EXPECT_EQ(h, 1) << "pieces of " << cut;
  }
  int calls = 0;
  forEachBlockIn(0, 0, 0, [&](std::size_t, std::size_t, std::size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
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

}  // namespace
}  // namespace braid::patterns
