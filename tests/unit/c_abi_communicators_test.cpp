// The C ABI's communicators made from others and its failure calls: split and subgroup, abort and shrink, each
// across three forked processes.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "unit/c_abi_support.hpp"

namespace {

using namespace braid::testing::capi;

TEST(CAbi, ThreeProcessesSplitAndSubgroup) {
  const auto results = runCRanks(3, [](braid_comm_t comm, int rank, int, std::string& failures) {
    braid_comm_t half = nullptr;
    if (braid_comm_split(comm, rank == 1 ? BRAID_NO_COLOR : 0, -rank, &half) != BRAID_SUCCESS) {
      failures += std::string("split: ") + braid_last_error();
      return;
    }
    if (rank == 1) {
      if (half != nullptr) failures += "BRAID_NO_COLOR gave a communicator";
    } else {
      int newRank = -1;
      std::int32_t x = rank;
      braid_comm_rank(half, &newRank);
      if (newRank != (rank == 2 ? 0 : 1)) failures += "split rank " + std::to_string(newRank);
      if (braid_allreduce(&x, &x, 1, BRAID_INT32, BRAID_SUM, half) != BRAID_SUCCESS || x != 2) {
        failures += "allreduce in the split";
      }
      braid_comm_destroy(half);
      const int members[] = {2, 0};
      braid_comm_t group = nullptr;
      if (braid_comm_subgroup(comm, members, 2, &group) != BRAID_SUCCESS || group == nullptr) {
        failures += std::string("subgroup: ") + braid_last_error();
        return;
      }
      if (braid_barrier(group) != BRAID_SUCCESS) failures += "barrier in the subgroup";
      braid_comm_destroy(group);
    }
    braid_comm_t none = nullptr;
    const int notMe[] = {(rank + 1) % 3};
    if (braid_comm_subgroup(comm, notMe, 1, &none) != BRAID_ERR_INVALID_ARGUMENT || none != nullptr) {
      failures += "a subgroup without the caller should be refused";
    }
  });
  EXPECT_EQ(braid::testing::failures(results), "");
}

// Rank 2 aborts; ranks 0 and 1 lose it, shrink to a communicator of two and allreduce there.
TEST(CAbi, ThreeProcessesAbortThenShrink) {
  const auto results = runCRanks(3, [](braid_comm_t comm, int rank, int, std::string& failures) {
    std::int32_t x = 1;
    if (braid_allreduce(&x, &x, 1, BRAID_INT32, BRAID_SUM, comm) != BRAID_SUCCESS || x != 3) {
      failures += "allreduce before the abort";
      return;
    }
    if (rank == 2) {
      if (braid_comm_abort(comm) != BRAID_SUCCESS) failures += "abort failed";
      if (braid_barrier(comm) != BRAID_ERR_ABORTED) failures += "a call after abort should be ABORTED";
      return;
    }
    const braid_result_t lost = braid_allreduce(&x, &x, 1, BRAID_INT32, BRAID_SUM, comm);
    if (lost != BRAID_ERR_PEER_LOST) {
      failures += std::string("expected PEER_LOST after rank 2 aborted: ") + describeFailure(lost);
      return;
    }
    braid_comm_t two = nullptr;
    if (braid_comm_shrink(comm, &two) != BRAID_SUCCESS || two == nullptr) {
      failures += std::string("shrink: ") + braid_last_error();
      return;
    }
    int size = 0;
    braid_comm_size(two, &size);
    std::int32_t y = rank + 1;
    if (size != 2 || braid_allreduce(&y, &y, 1, BRAID_INT32, BRAID_SUM, two) != BRAID_SUCCESS || y != 3) {
      failures += "allreduce among the survivors";
    }
    braid_comm_destroy(two);
  });
  EXPECT_EQ(braid::testing::failures(results), "");
}

}  // namespace
