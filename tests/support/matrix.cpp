#include "support/matrix.hpp"

#include "base/data_type.hpp"

namespace braid::testing {

namespace {

constexpr std::size_t kSizes[] = {0, 1, 7, 1023, (1u << 20) + 3};

// Collectives whose count is per block of a size()-block buffer use count/size for the largest size, so every
// case moves about the same bytes per rank.
bool perBlock(Coll c) {
  return c == Coll::kAllgather || c == Coll::kGather || c == Coll::kScatter || c == Coll::kAlltoall ||
         c == Coll::kAlltoallv || c == Coll::kReduceScatter || c == Coll::kAllgatherv || c == Coll::kGroupAllPairs;
}

}  // namespace

Body matrixBody(Coll coll, int n) {
  return [coll, n](Communicator& comm) {
    int variant = 0;
    for (int t = 0; t < kNumDataTypes; ++t) {
      const auto type = static_cast<DataType>(t);
      const auto ops = reduces(coll) ? opsFor(type) : std::vector<ReduceKind>{ReduceKind::kSum};
      for (ReduceKind op : ops) {
        for (std::size_t size : kSizes) {
          const bool big = size > 4096;
          const std::size_t count = big && perBlock(coll) ? size / n + 1 : size;
          for (bool inPlace : {false, true}) {
            if (inPlace && (!supportsInPlace(coll) || big)) continue;
            ++variant;
            runCase(comm, Case{coll, type, op, count, inPlace, variant % n, variant % 3 == 0});
          }
        }
      }
    }
  };
}

std::vector<Case> sampledCases(int n) {
  std::vector<Case> cases;
  int k = 0;
  for (Coll coll : allColls()) {
    for (int t = 0; t < kNumDataTypes; ++t) {
      const auto type = static_cast<DataType>(t);
      const auto ops = reduces(coll) ? opsFor(type) : std::vector<ReduceKind>{ReduceKind::kSum};
      const std::size_t esz = dataTypeSize(type);
      const std::size_t sizes[] = {0, 1, 1023, (64u << 10) / esz + 3, (16u << 20) / esz};
      ++k;
      Case c{coll, type, ops[k % ops.size()], sizes[k % 5], false, k % n, k % 4 == 0};
      const bool perRankBuffer = coll == Coll::kAllgather || coll == Coll::kGather || coll == Coll::kAlltoall ||
                                 coll == Coll::kScatter || coll == Coll::kReduceScatter ||
                                 coll == Coll::kGroupAllPairs || coll == Coll::kAlltoallv || coll == Coll::kAllgatherv;
      if (perRankBuffer && c.count > 1024) c.count = c.count / n + 1;
      cases.push_back(c);
      if (supportsInPlace(coll)) {
        c.inPlace = true;
        c.count = sizes[(k + 2) % 4];
        cases.push_back(c);
      }
    }
  }
  return cases;
}

}  // namespace braid::testing
