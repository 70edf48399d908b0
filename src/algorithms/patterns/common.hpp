// Argument checks and power-of-two arithmetic shared by the schedules in patterns/.
#pragma once

#include <bit>

#include "base/error.hpp"

namespace braid::patterns {

/// Throws InvalidArgument unless size >= 1.
inline void checkSize(int size) {
  if (size < 1) fail(ErrorCode::kInvalidArgument, {}, "size ", size, " invalid: a group needs at least 1 rank");
}

/// Throws InvalidArgument unless size >= 1 and 0 <= rank < size.
inline void checkRank(int rank, int size) {
  checkSize(size);
  if (rank < 0 || rank >= size) {
    fail(ErrorCode::kInvalidArgument, {}, "rank ", rank, " out of range for ", size, " ranks");
  }
}

/// Throws InvalidArgument unless 0 <= root < size (size already checked).
inline void checkRoot(int root, int size) {
  if (root < 0 || root >= size) {
    fail(ErrorCode::kInvalidArgument, {}, "root ", root, " out of range for ", size, " ranks");
  }
}

/// Throws InvalidArgument unless 0 <= step < steps; `what` names the schedule in the message.
inline void checkStep(int step, int steps, const char* what) {
  if (step < 0 || step >= steps) {
    fail(ErrorCode::kInvalidArgument, {}, what, " step ", step, " out of range: it has ", steps, " steps");
  }
}

inline constexpr bool isPowerOfTwo(int n) { return n > 0 && std::has_single_bit(static_cast<unsigned>(n)); }

/// The largest power of two <= n, for n >= 1.
inline constexpr int floorPowerOfTwo(int n) { return static_cast<int>(std::bit_floor(static_cast<unsigned>(n))); }

/// ceil(log2(n)) for n >= 1: the rounds a binomial tree or recursive doubling needs.
inline constexpr int ceilLog2(int n) {
  return n <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<unsigned>(n - 1)));
}

}  // namespace braid::patterns
