// Point-to-point semantics: tags, ordering, unexpected messages, large messages through small rings.
#include <gtest/gtest.h>

#include <numeric>

#include "support/collective_cases.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

TEST(P2p, ReceivesMatchTagsNotArrivalOrder) {
  auto results = runThreads(2, [](Communicator& comm) {
    if (comm.rank() == 0) {
      for (int tag = 0; tag < 5; ++tag) {
        std::vector<int> msg(100 + tag, tag);
        comm.send(msg.data(), msg.size(), DataType::kInt32, 1, tag);
      }
    } else {
      for (int tag = 4; tag >= 0; --tag) {  // reverse order: earlier messages wait as unexpected
        std::vector<int> msg(100 + tag, -1);
        comm.recv(msg.data(), msg.size(), DataType::kInt32, 0, tag);
        for (int v : msg) require(v == tag, "wrong payload for tag " + std::to_string(tag));
      }
    }
  });
  EXPECT_EQ(failures(results), "");
}

TEST(P2p, SameTagMessagesArriveInOrder) {
  auto results = runThreads(2, [](Communicator& comm) {
    for (int i = 0; i < 50; ++i) {
      int v = i;
      if (comm.rank() == 0) {
        comm.send(&v, 1, DataType::kInt32, 1);
      } else {
        comm.recv(&v, 1, DataType::kInt32, 0);
        require(v == i, "out of order");
      }
    }
  });
  EXPECT_EQ(failures(results), "");
}

TEST(P2p, LargeExchangeBothWaysInOneGroupDoesNotDeadlock) {
  Settings s = testSettings();
  s.shmP2pBytes = 4096;  // 10 MiB through a 4 KiB ring
  auto results = runThreads(
      2,
      [](Communicator& comm) {
        const std::size_t n = (10u << 20) / sizeof(std::uint32_t);
        std::vector<std::uint32_t> out(n), in(n, 0);
        std::iota(out.begin(), out.end(), static_cast<std::uint32_t>(comm.rank()) * 1000);
        const int peer = 1 - comm.rank();
        comm.group({P2pOp{P2pOp::Kind::kSend, peer, out.data(), n, DataType::kUint32, 0},
                    P2pOp{P2pOp::Kind::kRecv, peer, in.data(), n, DataType::kUint32, 0}});
        for (std::size_t i = 0; i < n; i += 4099) {
          require(in[i] == static_cast<std::uint32_t>(peer) * 1000 + i, "payload");
        }
      },
      s);
  EXPECT_EQ(failures(results), "");
}

TEST(P2p, CollectivesAndPointToPointInterleave) {
  auto results = runThreads(3, [](Communicator& comm) {
    for (int round = 0; round < 20; ++round) {
      int v = comm.rank() + round;
      const int next = (comm.rank() + 1) % 3, prev = (comm.rank() + 2) % 3;
      int got = -1;
      comm.group({P2pOp{P2pOp::Kind::kSend, next, &v, 1, DataType::kInt32, round},
                  P2pOp{P2pOp::Kind::kRecv, prev, &got, 1, DataType::kInt32, round}});
      require(got == prev + round, "ring value");
      comm.allreduce(&got, &got, 1, DataType::kInt32, ReduceKind::kSum);
      require(got == 3 + 3 * round, "allreduce value");
    }
  });
  EXPECT_EQ(failures(results), "");
}

}  // namespace
}  // namespace braid::testing
