// Alltoall exchange schedules: every ordered pair of ranks exchanges exactly once in size-1 steps.
#pragma once

#include "algorithms/patterns/common.hpp"

namespace braid::patterns {

/// The two peers of one step: this rank sends its block for `sendTo` and receives `recvFrom`'s block for it.
struct PairwiseStep {
  int sendTo = -1;
  int recvFrom = -1;

  friend bool operator==(const PairwiseStep&, const PairwiseStep&) = default;
};

/// Steps of an alltoall among `size` ranks, excluding the local copy to oneself: size - 1.
inline int pairwiseSteps(int size) {
  checkSize(size);
  return size - 1;
}

/// Step s (1 <= s < size) of the shifted exchange, for any size: send to rank+s, receive from rank-s (mod
/// size). Every rank sends and receives once per step, so no rank is hit by two senders at once.
inline PairwiseStep pairwiseStep(int rank, int size, int step) {
  checkRank(rank, size);
  if (step < 1 || step >= size) {
    fail(ErrorCode::kInvalidArgument, {}, "pairwise step ", step, " out of range 1..", size - 1, " for ", size,
         " ranks");
  }
  // Compare before adding: rank + step may pass INT_MAX for groups of more than 2^30 ranks.
  return {step < size - rank ? rank + step : rank - (size - step), rank >= step ? rank - step : rank + (size - step)};
}

/// Step s (1 <= s < size) of the XOR exchange, for a power-of-two size: rank and rank xor s swap blocks, so
/// each step is a set of disjoint bidirectional pairs (one connection each way carries both directions).
inline PairwiseStep xorStep(int rank, int size, int step) {
  checkRank(rank, size);
  if (!isPowerOfTwo(size)) fail(ErrorCode::kInvalidArgument, {}, "xor exchange needs a power-of-two size, not ", size);
  if (step < 1 || step >= size) {
    fail(ErrorCode::kInvalidArgument, {}, "xor step ", step, " out of range 1..", size - 1, " for ", size, " ranks");
  }
  return {rank ^ step, rank ^ step};
}

}  // namespace braid::patterns
