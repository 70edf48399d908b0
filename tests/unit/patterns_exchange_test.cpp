// The halving-doubling and pairwise exchange schedules, checked by simulating them on every world size 1..64 and
// every rank (support/schedule_counts.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

#include "algorithms/patterns/halving_doubling.hpp"
#include "algorithms/patterns/pairwise.hpp"
#include "support/schedule_counts.hpp"

namespace braid::patterns {
namespace {

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
