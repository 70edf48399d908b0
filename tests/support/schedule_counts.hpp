// Checking a schedule by simulation (tests/unit/patterns_*_test.cpp): each rank's partial result is a vector counting
// how many times each rank's contribution is in it, so a schedule is right when every rank ends with every
// contribution exactly once.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "braid/types.hpp"

namespace braid::patterns {

constexpr int kMaxRanks = 64;

// counts[c]: how many times rank c's contribution is in a partial result.
using Counts = std::vector<int>;

inline Counts contributionOf(int rank, int size) {
  Counts c(static_cast<std::size_t>(size), 0);
  c[static_cast<std::size_t>(rank)] = 1;
  return c;
}

inline void accumulate(Counts& into, const Counts& from) {
  for (std::size_t i = 0; i < into.size(); ++i) into[i] += from[i];
}

inline bool isComplete(const Counts& c) {
  return std::all_of(c.begin(), c.end(), [](int n) { return n == 1; });
}

// Computed by counting, not with the library's bit tricks.
inline int ceilLog2ByCounting(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

inline int floorPowerOfTwoByCounting(int n) {
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

}  // namespace braid::patterns
