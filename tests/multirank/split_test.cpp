// Communicators made from others: split by color and key, subgroups from a list of ranks, over shared memory
// (ranks as processes) and TCP (threads and processes). Each new communicator has its own ranks and sequence
// numbers, and works interleaved with its parent.
#include <gtest/gtest.h>

#include <functional>
#include <numeric>

#include "core/communicator_impl.hpp"
#include "support/collective_cases.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Four ranks split by parity, keys reversing the order: {0,2} -> new ranks {1,0}, {1,3} -> {1,0}.
void splitByParity(Communicator& comm) {
  const std::int64_t before = comm.sequenceNumber();
  auto half = comm.split(comm.rank() % 2, -comm.rank());
  require(half != nullptr, "split returned no communicator");
  require(half->size() == 2, "split size " + std::to_string(half->size()));
  const int expectedRank = comm.rank() < 2 ? 1 : 0;
  require(half->rank() == expectedRank, "split rank " + std::to_string(half->rank()));
  require(half->sequenceNumber() == 0, "a new communicator starts at sequence number 0");
  for (int round = 0; round < 3; ++round) {
    int x = comm.rank();
    half->allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
    require(x == (comm.rank() % 2 == 0 ? 0 + 2 : 1 + 3), "allreduce within the half gave " + std::to_string(x));
    int y = 1;
    comm.allreduce(&y, &y, 1, DataType::kInt32, ReduceKind::kSum);  // the parent, interleaved
    require(y == 4, "parent allreduce after the split gave " + std::to_string(y));
  }
  int root = half->rank() == 0 ? comm.rank() : -1;
  half->broadcast(&root, 1, DataType::kInt32, 0);
  require(root == (comm.rank() % 2 == 0 ? 2 : 3), "broadcast from the half's rank 0");
  require(half->sequenceNumber() == 4, "the half counts its own calls");
  require(comm.sequenceNumber() == before + 1 + 3, "the parent counts the split's allgather and its own calls");
  // A split of the split: each rank alone.
  auto alone = half->split(half->rank(), 0);
  require(alone && alone->size() == 1 && alone->rank() == 0, "split of a split");
  int z = 7;
  alone->allreduce(&z, &z, 1, DataType::kInt32, ReduceKind::kSum);
  require(z == 7, "allreduce of one rank");
}

void subgroupOfTwo(Communicator& comm) {
  if (comm.rank() == 1 || comm.rank() == 3) {
    auto group = comm.subgroup({3, 1});
    require(group->size() == 2 && group->rank() == (comm.rank() == 3 ? 0 : 1), "subgroup ranks follow the list");
    int x = comm.rank();
    group->allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
    require(x == 4, "subgroup allreduce gave " + std::to_string(x));
    int who = comm.rank();
    group->broadcast(&who, 1, DataType::kInt32, 0);
    require(who == 3, "subgroup broadcast from its rank 0 (parent rank 3)");
    auto again = comm.subgroup({3, 1});  // a second group of the same ranks is another communicator
    again->barrier();
  }
  int y = 1;
  comm.allreduce(&y, &y, 1, DataType::kInt32, ReduceKind::kSum);
  require(y == comm.size(), "parent allreduce after subgroups");
}

TEST(Split, ByColorAndKeyOverTcpThreads) { EXPECT_EQ(failures(runThreads(4, splitByParity, tcpSettings())), ""); }

TEST(Split, ByColorAndKeyOverSharedMemory) {
  EXPECT_EQ(failures(runProcesses(
                4,
                [](Communicator& comm) {
                  splitByParity(comm);
                  auto half = comm.split(comm.rank() % 2, 0);
                  require(std::string(half->transportName()) == "shm", "processes of one host split onto shm");
                },
                120, "shm")),
            "");
}

TEST(Split, ByColorAndKeyOverTcpProcesses) {
  EXPECT_EQ(failures(runProcesses(
                4,
                [](Communicator& comm) {
                  splitByParity(comm);
                  auto half = comm.split(0, 0);
                  require(std::string(half->transportName()) == "tcp", "a TCP communicator splits onto TCP");
                },
                120, "tcp")),
            "");
}

TEST(Split, NoColorTakesPartButJoinsNothing) {
  EXPECT_EQ(failures(runThreads(
                3,
                [](Communicator& comm) {
                  auto mine = comm.split(comm.rank() == 1 ? Communicator::kNoColor : 5, 0);
                  if (comm.rank() == 1) {
                    require(mine == nullptr, "kNoColor should give no communicator");
                    return;
                  }
                  require(mine && mine->size() == 2, "the two colored ranks form a communicator");
                  mine->barrier();
                },
                tcpSettings())),
            "");
}

TEST(Subgroup, ListedRanksOnlyOverTcpThreads) { EXPECT_EQ(failures(runThreads(4, subgroupOfTwo, tcpSettings())), ""); }

TEST(Subgroup, ListedRanksOnlyOverSharedMemory) { EXPECT_EQ(failures(runProcesses(4, subgroupOfTwo, 120, "shm")), ""); }

TEST(Subgroup, BadListsAreNamed) {
  EXPECT_EQ(failures(runThreads(
                2,
                [](Communicator& comm) {
                  auto expectInvalid = [&](const std::vector<int>& ranks, const std::string& part) {
                    try {
                      comm.subgroup(ranks);
                    } catch (const Error& e) {
                      require(e.code() == ErrorCode::kInvalidArgument && contains(e.what(), part), e.what());
                      return;
                    }
                    throw std::runtime_error("no error for a subgroup lacking " + part);
                  };
                  expectInvalid({}, "no ranks");
                  expectInvalid({comm.rank(), comm.rank()}, "twice");
                  expectInvalid({comm.rank(), 9}, "rank 9");
                  expectInvalid({1 - comm.rank()}, "not in its list");
                },
                tcpSettings())),
            "");
}

// A split that meets another call is named as a split; split and subgroup of an aborted communicator fail as every
// call then does, instead of making a communicator the aborted rank takes part in.
TEST(Split, AMismatchedOrAbortedParentIsNamed) {
  EXPECT_EQ(failures(runThreads(
                2,
                [](Communicator& comm) {
                  try {
                    if (comm.rank() == 0) {
                      comm.split(0, 0);
                    } else {
                      comm.barrier();
                    }
                    throw std::runtime_error("a split went through against a barrier");
                  } catch (const Error& e) {
                    require(e.code() == ErrorCode::kMismatch, e.what());
                    if (comm.rank() == 0) require(contains(e.what(), "split"), e.what());
                  }
                  comm.abort();
                  auto expectAborted = [&](const std::function<void()>& call, const char* what) {
                    try {
                      call();
                    } catch (const Error& e) {
                      require(e.code() == ErrorCode::kAborted && contains(e.what(), what), e.what());
                      return;
                    }
                    throw std::runtime_error(std::string(what) + " of an aborted communicator went through");
                  };
                  expectAborted([&] { comm.split(0, 0); }, "split");
                  expectAborted([&] { comm.subgroup({0, 1}); }, "subgroup");
                },
                tcpSettings())),
            "");
}

// Members that pass different lists (here the same ranks in another order) meet no one: the timeout says so.
TEST(Subgroup, MembersWithDifferentListsAreToldWhyTheyMetNoOne) {
  Settings settings = tcpSettings();
  settings.timeoutSeconds = 1;
  EXPECT_EQ(failures(runThreads(
                2,
                [](Communicator& comm) {
                  try {
                    comm.subgroup(comm.rank() == 0 ? std::vector<int>{0, 1} : std::vector<int>{1, 0});
                  } catch (const Error& e) {
                    require(e.code() == ErrorCode::kTimeout && contains(e.what(), "this list") &&
                                contains(e.what(), comm.rank() == 0 ? "[0,1]" : "[1,0]") &&
                                e.context().rank == comm.rank() && e.context().op == "subgroup",
                            e.what());
                    return;
                  }
                  throw std::runtime_error("subgroups of different lists met");
                },
                settings)),
            "");
}

TEST(Split, ThreadRanksWithoutAStoreSayWhy) {
  EXPECT_EQ(failures(runThreads(2,
                                [](Communicator& comm) {
                                  try {
                                    comm.split(0, 0);
                                  } catch (const Error& e) {
                                    require(e.code() == ErrorCode::kUnavailable && contains(e.what(), "store"),
                                            e.what());
                                    return;
                                  }
                                  throw std::runtime_error("split without a store did not fail");
                                })),
            "");
}

}  // namespace
}  // namespace braid::testing
