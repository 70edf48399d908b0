// Collectives posted while nonblocking point-to-point calls are pending run without waiting for them, as under MPI and
// Gloo (algorithms/p2p_feed.hpp, core/p2p_group.cpp): a receive posted before a collective whose matching send the
// peer posts after that collective completes, over every transport. Each of these patterns once failed with Mismatch
// (the collective waited for the group, the group for a send behind the peer's collective).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "multirank/p2p_transports.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

using P2pBesideCollectives = P2pOverTransports;

void expectSum(std::uint64_t got, std::uint64_t want, const std::string& what) {
  if (got != want)
    throw std::runtime_error(what + " gave " + std::to_string(got) + ", expected " + std::to_string(want));
}

// Each rank posts a receive, then an allreduce, then the send the peer's receive waits for.
TEST_P(P2pBesideCollectives, AReceiveThenACollectiveThenTheMatchingSendComplete) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           const int peer = 1 - comm.rank();
                           std::vector<std::uint32_t> got(1 << 16, 0), mine = pattern(got.size(), comm.rank());
                           std::uint64_t sum = comm.rank() + 1;
                           Work received = comm.recvAsync(got.data(), got.size(), DataType::kUint32, peer, 5);
                           comm.allreduce(&sum, &sum, 1, DataType::kUint64, ReduceKind::kSum);
                           comm.send(mine.data(), mine.size(), DataType::kUint32, peer, 5);
                           received.wait();
                           expectSum(sum, 3, "the allreduce");
                           expectPattern(got, static_cast<std::uint32_t>(peer), "the message");
                         })),
            "");
}

// Only rank 0 has a receive pending when it reaches the allreduce; rank 1 runs the allreduce first and sends after it.
// Rank 0's group gets the message, and a receive from any source takes one the same way.
TEST_P(P2pBesideCollectives, APeerThatSendsAfterTheCollectiveIsReceived) {
  EXPECT_EQ(failures(run(3,
                         [](Communicator& comm) {
                           std::vector<std::uint32_t> named(1000, 0), any(1000, 0);
                           std::uint64_t sum = 1;
                           if (comm.rank() == 0) {
                             Work fromOne = comm.recvAsync(named.data(), named.size(), DataType::kUint32, 1, 3);
                             Work fromAny = comm.recvAsync(any.data(), any.size(), DataType::kUint32, kAnySource, 4);
                             comm.allreduce(&sum, &sum, 1, DataType::kUint64, ReduceKind::kSum);
                             fromOne.wait();
                             fromAny.wait();
                             expectPattern(named, 1, "from rank 1");
                             if (fromAny.source() != 2) {
                               throw std::runtime_error("the receive from any source names rank " +
                                                        std::to_string(fromAny.source()));
                             }
                             expectPattern(any, 2, "from any source");
                           } else {
                             comm.allreduce(&sum, &sum, 1, DataType::kUint64, ReduceKind::kSum);
                             std::vector<std::uint32_t> mine = pattern(named.size(), comm.rank());
                             comm.send(mine.data(), mine.size(), DataType::kUint32, 0, comm.rank() == 1 ? 3 : 4);
                           }
                           expectSum(sum, 3, "the allreduce");
                         })),
            "");
}

// Rank 1 makes a blocking send larger than the shared-memory ring before it reaches the allreduce, which rank 0 is
// already in with the matching receive pending: rank 0's allreduce must keep reading the message meanwhile, or rank 1
// never gets there. The mirror: rank 1's blocking receive of a large message rank 0's pending send carries.
TEST_P(P2pBesideCollectives, APeerStillSendingOrReceivingBeforeTheCollectiveGetsThere) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           std::vector<std::uint32_t> big(1 << 20, 0);
                           for (int round = 0; round < 2; ++round) {
                             std::uint64_t sum = 1;
                             const bool rankZeroReceives = round == 0;
                             if (comm.rank() == 0) {
                               std::vector<std::uint32_t> mine = pattern(big.size(), 10 + round);
                               Work w = rankZeroReceives
                                            ? comm.recvAsync(big.data(), big.size(), DataType::kUint32, 1, round)
                                            : comm.sendAsync(mine.data(), mine.size(), DataType::kUint32, 1, round);
                               comm.allreduce(&sum, &sum, 1, DataType::kUint64, ReduceKind::kSum);
                               w.wait();
                               if (rankZeroReceives) expectPattern(big, 20, "the large message to rank 0");
                             } else {
                               // Rank 0 is in its allreduce by now.
                               std::this_thread::sleep_for(std::chrono::milliseconds(300));
                               if (rankZeroReceives) {
                                 std::vector<std::uint32_t> mine = pattern(big.size(), 20);
                                 comm.send(mine.data(), mine.size(), DataType::kUint32, 0, round);
                               } else {
                                 comm.recv(big.data(), big.size(), DataType::kUint32, 0, round);
                                 expectPattern(big, 11, "the large message to rank 1");
                               }
                               comm.allreduce(&sum, &sum, 1, DataType::kUint64, ReduceKind::kSum);
                             }
                             expectSum(sum, 2, "the allreduce");
                           }
                         })),
            "");
}

// Collectives and messages mixed around a ring of three ranks, every call async: the collectives complete in their
// order with the right results, each message lands, and calls posted behind a collective still join the group.
TEST_P(P2pBesideCollectives, CollectivesAndMessagesMixedAroundARingComplete) {
  EXPECT_EQ(
      failures(run(3,
                   [](Communicator& comm) {
                     const int n = comm.size();
                     const int next = (comm.rank() + 1) % n;
                     const int prev = (comm.rank() + n - 1) % n;
                     constexpr int kRounds = 20;
                     std::vector<std::vector<std::uint32_t>> got(kRounds, std::vector<std::uint32_t>(5000));
                     std::vector<std::vector<std::uint32_t>> mine(kRounds);
                     std::vector<std::uint64_t> sums(kRounds);
                     std::vector<std::uint32_t> rootValue(kRounds);
                     std::vector<Work> works;
                     for (int i = 0; i < kRounds; ++i) {
                       mine[i] = pattern(5000, 100 * comm.rank() + i);
                       sums[i] = comm.rank() + i;
                       rootValue[i] = comm.rank() == i % n ? 7 + i : 0;
                       works.push_back(comm.recvAsync(got[i].data(), 5000, DataType::kUint32, prev, i));
                       works.push_back(comm.allreduceAsync(&sums[i], &sums[i], 1, DataType::kUint64, ReduceKind::kSum));
                       // Every other round the send goes after the broadcast: it joins the group behind it.
                       if (i % 2 == 0) {
                         works.push_back(comm.sendAsync(mine[i].data(), 5000, DataType::kUint32, next, i));
                       }
                       works.push_back(comm.broadcastAsync(&rootValue[i], 1, DataType::kUint32, i % n));
                       if (i % 2 == 1) {
                         works.push_back(comm.sendAsync(mine[i].data(), 5000, DataType::kUint32, next, i));
                       }
                     }
                     for (Work& w : works) w.wait();
                     for (int i = 0; i < kRounds; ++i) {
                       expectSum(sums[i], 3 + 3 * i, "allreduce " + std::to_string(i));
                       expectSum(rootValue[i], 7 + i, "broadcast " + std::to_string(i));
                       expectPattern(got[i], 100 * prev + i, "message " + std::to_string(i));
                     }
                   })),
      "");
}

// A collective run inside a group fails as it would anywhere (rank 1 reduces two elements, rank 0 one: Mismatch on
// both), and alone: the communicator goes on, so the group's pending receive still takes the message rank 1 sends
// after it, and the next allreduce works.
TEST_P(P2pBesideCollectives, ACollectiveThatFailsInsideAGroupFailsAlone) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           std::vector<std::uint32_t> got(1000, 0);
                           std::uint64_t values[2] = {1, 1};
                           Work received;
                           if (comm.rank() == 0) {
                             received = comm.recvAsync(got.data(), got.size(), DataType::kUint32, 1, 5);
                           }
                           std::string wrong;
                           try {
                             comm.allreduce(values, values, comm.rank() == 0 ? 1 : 2, DataType::kUint64,
                                            ReduceKind::kSum);
                             wrong += "the mismatched allreduce completed; ";
                           } catch (const Error& e) {
                             if (e.code() != ErrorCode::kMismatch) wrong += std::string("the allreduce: ") + e.what();
                           }
                           if (comm.rank() == 1) {
                             std::vector<std::uint32_t> mine = pattern(got.size(), 1);
                             comm.send(mine.data(), mine.size(), DataType::kUint32, 0, 5);
                           } else {
                             received.wait();
                             expectPattern(got, 1, "the message sent after the failed allreduce");
                           }
                           std::uint64_t sum = 1;
                           comm.allreduce(&sum, &sum, 1, DataType::kUint64, ReduceKind::kSum);
                           expectSum(sum, 2, "the next allreduce");
                           if (!wrong.empty()) throw std::runtime_error(wrong);
                         })),
            "");
}

INSTANTIATE_TEST_SUITE_P(Transports, P2pBesideCollectives, everyP2pTransport(),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace braid::testing
