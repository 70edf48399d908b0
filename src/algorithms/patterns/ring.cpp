#include "algorithms/patterns/ring.hpp"

#include <numeric>
#include <utility>

#include "algorithms/patterns/common.hpp"

namespace braid::patterns {

Ring::Ring(int rank, int size) : rank_(rank), position_(rank) {
  checkRank(rank, size);
  order_.resize(static_cast<std::size_t>(size));
  std::iota(order_.begin(), order_.end(), 0);
}

Ring::Ring(int rank, std::vector<int> order, int position)
    : rank_(rank), order_(std::move(order)), position_(position) {}

Ring Ring::withOrder(int rank, std::vector<int> order) {
  const int size = static_cast<int>(order.size());
  checkRank(rank, size);
  std::vector<bool> seen(order.size(), false);
  int position = -1;
  for (int i = 0; i < size; ++i) {
    const int r = order[static_cast<std::size_t>(i)];
    if (r < 0 || r >= size) {
      fail(ErrorCode::kInvalidArgument, {}, "ring order entry ", r, " out of range for ", size, " ranks");
    }
    if (seen[static_cast<std::size_t>(r)]) fail(ErrorCode::kInvalidArgument, {}, "ring order lists rank ", r, " twice");
    seen[static_cast<std::size_t>(r)] = true;
    if (r == rank) position = i;
  }
  // size distinct entries in [0, size) form a permutation, so rank (checked in range) was found.
  return Ring(rank, std::move(order), position);
}

int Ring::rankAt(int position) const {
  const int n = size();
  return order_[static_cast<std::size_t>(((position % n) + n) % n)];
}

// Block order[q] starts at position q+1 at step 0 and travels forward one hop per step, gathering one
// contribution per hop, so after n-1 hops it arrives complete at position q: its owner.
int Ring::reduceScatterSendBlock(int step) const {
  checkStep(step, steps(), "ring reduce-scatter");
  return rankAt(position_ - step - 1);
}

int Ring::reduceScatterRecvBlock(int step) const {
  checkStep(step, steps(), "ring reduce-scatter");
  return rankAt(position_ - step - 2);
}

// Each owner injects its block at step 0; every rank forwards at step s what it received at step s-1.
int Ring::allgatherSendBlock(int step) const {
  checkStep(step, steps(), "ring allgather");
  return rankAt(position_ - step);
}

int Ring::allgatherRecvBlock(int step) const {
  checkStep(step, steps(), "ring allgather");
  return rankAt(position_ - step - 1);
}

}  // namespace braid::patterns
