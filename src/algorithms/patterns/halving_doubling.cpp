#include "algorithms/patterns/halving_doubling.hpp"

#include <utility>

#include "algorithms/patterns/common.hpp"

namespace braid::patterns {

namespace {

// Reverses the low `bits` bits of v: the block virtual rank v owns after halving, and its inverse.
int bitReverse(int v, int bits) {
  int out = 0;
  for (int i = 0; i < bits; ++i) out |= ((v >> i) & 1) << (bits - 1 - i);
  return out;
}

}  // namespace

HalvingDoubling::HalvingDoubling(int rank, int size) : rank_(rank), size_(size), p_(0), steps_(0) {
  checkRank(rank, size);
  p_ = floorPowerOfTwo(size);
  steps_ = ceilLog2(p_);
}

int HalvingDoubling::foldPartner() const {
  if (foldedOut()) return rank_ - p_;
  return rank_ < size_ - p_ ? rank_ + p_ : -1;
}

int HalvingDoubling::rankOfVirtual(int v) const {
  if (v < 0 || v >= p_) fail(ErrorCode::kInvalidArgument, {}, "virtual rank ", v, " out of range for ", p_, " ranks");
  return v;
}

void HalvingDoubling::checkActive(const char* what) const {
  if (foldedOut()) {
    fail(ErrorCode::kInvalidArgument, {}, "rank ", rank_, " of ", size_,
         " is folded out of halving-doubling (power of two ", p_, "): it has no ", what);
  }
}

// Before step k the range is fixed by bits 0..k-1 of v: bit j chose the upper or lower half at step j.
ExchangeStep HalvingDoubling::halvingStep(int k) const {
  checkActive("halving steps");
  checkStep(k, steps_, "halving");
  int first = 0;
  for (int j = 0; j < k; ++j) first += ((rank_ >> j) & 1) * (p_ >> (j + 1));
  const int half = p_ >> (k + 1);
  const BlockRange lower{first, half};
  const BlockRange upper{first + half, half};
  const bool keepUpper = ((rank_ >> k) & 1) != 0;
  return {rank_ ^ (1 << k), keepUpper ? lower : upper, keepUpper ? upper : lower};
}

ExchangeStep HalvingDoubling::doublingStep(int k) const {
  checkActive("doubling steps");
  checkStep(k, steps_, "doubling");
  ExchangeStep step = halvingStep(steps_ - 1 - k);
  std::swap(step.send, step.recv);
  return step;
}

int HalvingDoubling::ownedBlock() const {
  checkActive("owned block");
  return bitReverse(rank_, steps_);
}

int HalvingDoubling::ownerOfBlock(int block) const {
  if (block < 0 || block >= p_) {
    fail(ErrorCode::kInvalidArgument, {}, "block ", block, " out of range for ", p_, " blocks");
  }
  return bitReverse(block, steps_);
}

}  // namespace braid::patterns
