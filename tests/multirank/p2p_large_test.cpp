// Messages larger than the shared-memory ring, which the receiver reads from the sender's memory in one copy
// (algorithms/host/p2p.hpp), in every way a receive may meet them, over every transport: taken by the receive posted
// for them, kept aside while a receive of another tag is served first, taken by a receive from any source, and
// together with small ones in one group, each arriving whole and in its sender's order.
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

using Kind = P2pOp::Kind;
using P2pLarge = P2pOverTransports;

constexpr std::size_t kLarge = 1 << 20;  // elements: 4 MiB, 64 rings' worth (P2pOverTransports' ring is 64 KiB)

TEST_P(P2pLarge, ALargeMessageKeptAsideArrivesWholeAfterTheOneBehindIt) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           std::vector<std::uint32_t> first(kLarge), second(kLarge + 5);
                           if (comm.rank() == 1) {
                             first = pattern(first.size(), 1);
                             second = pattern(second.size(), 2);
                             comm.group({op(Kind::kSend, 0, first, 1), op(Kind::kSend, 0, second, 2)});
                             return;
                           }
                           // Tag 2 first: tag 1's message, ahead of it from the same sender, is read aside.
                           comm.recv(second.data(), second.size(), DataType::kUint32, 1, 2);
                           comm.recv(first.data(), first.size(), DataType::kUint32, 1, 1);
                           expectPattern(second, 2, "the message received first");
                           expectPattern(first, 1, "the message kept aside");
                         })),
            "");
}

TEST_P(P2pLarge, LargeAndSmallMessagesFromAnySourceArriveWholeInEachSendersOrder) {
  EXPECT_EQ(failures(run(
                3,
                [](Communicator& comm) {
                  if (comm.rank() != 0) {
                    std::vector<std::uint32_t> big = pattern(kLarge, 10 * comm.rank());
                    std::vector<std::uint32_t> small = pattern(100, 10 * comm.rank() + 1);
                    std::vector<std::uint32_t> big2 = pattern(kLarge, 10 * comm.rank() + 2);
                    comm.group({op(Kind::kSend, 0, big, 7), op(Kind::kSend, 0, small, 8), op(Kind::kSend, 0, big2, 7)});
                    return;
                  }
                  std::vector<int> seen(3, 0);
                  for (int i = 0; i < 4; ++i) {
                    std::vector<std::uint32_t> got(kLarge, 0);
                    const int from = comm.recv(got.data(), got.size(), DataType::kUint32, kAnySource, 7);
                    if (from != 1 && from != 2)
                      throw std::runtime_error("a receive named rank " + std::to_string(from));
                    expectPattern(got, static_cast<std::uint32_t>(10 * from + 2 * seen[from]),
                                  "message " + std::to_string(seen[from]) + " of rank " + std::to_string(from));
                    ++seen[from];
                  }
                  for (int from = 1; from <= 2; ++from) {
                    std::vector<std::uint32_t> small(100, 0);
                    comm.recv(small.data(), small.size(), DataType::kUint32, from, 8);
                    expectPattern(small, static_cast<std::uint32_t>(10 * from + 1), "the small message");
                  }
                })),
            "");
}

TEST_P(P2pLarge, ALargeMessageOfAnotherSizeFailsWithMismatchAndTheNextArrives) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           std::vector<std::uint32_t> big(kLarge), other(kLarge / 2);
                           if (comm.rank() == 1) {
                             big = pattern(big.size(), 3);
                             comm.send(big.data(), big.size(), DataType::kUint32, 0, 1);
                             comm.send(big.data(), big.size(), DataType::kUint32, 0, 2);
                             return;
                           }
                           try {
                             comm.recv(other.data(), other.size(), DataType::kUint32, 1, 1);
                             throw std::runtime_error("a receive of half the size completed");
                           } catch (const Error& e) {
                             const std::string text = e.what();
                             if (e.code() != ErrorCode::kMismatch || text.find("4194304 bytes") == std::string::npos) {
                               throw std::runtime_error(std::string("the receive failed otherwise: ") + e.what());
                             }
                           }
                           comm.recv(big.data(), big.size(), DataType::kUint32, 1, 2);
                           expectPattern(big, 3, "the message after the mismatch");
                         })),
            "");
}

TEST_P(P2pLarge, AMismatchedReceiveFailsItsGroupOnceTheGroupsOtherMessagesMoved) {
  // As MPI's truncation error: the receive of another size fails, and the large send beside it in the group still
  // reaches its peer, whose group succeeds; the pair's later messages arrive whole.
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           std::vector<std::uint32_t> big = pattern(kLarge, comm.rank() == 0 ? 4 : 0);
                           if (comm.rank() == 1) {
                             // The small message first: rank 0 finds it of another size while its large one is
                             // still on its way.
                             std::vector<std::uint32_t> small = pattern(50, 5);
                             comm.send(small.data(), small.size(), DataType::kUint32, 0, 2);
                             std::this_thread::sleep_for(std::chrono::milliseconds(100));
                             big.assign(kLarge, 0);
                             comm.recv(big.data(), big.size(), DataType::kUint32, 0, 1);
                             expectPattern(big, 4, "the large message beside the mismatch");
                             comm.recv(big.data(), big.size(), DataType::kUint32, 0, 3);
                             expectPattern(big, 6, "the message after the mismatch");
                             return;
                           }
                           std::vector<std::uint32_t> small(100, 0);
                           try {
                             comm.group({op(Kind::kSend, 1, big, 1), op(Kind::kRecv, 1, small, 2)});
                             throw std::runtime_error("a receive of twice the size completed");
                           } catch (const Error& e) {
                             const std::string text = e.what();
                             if (e.code() != ErrorCode::kMismatch || text.find("200 bytes") == std::string::npos) {
                               throw std::runtime_error(std::string("the group failed otherwise: ") + e.what());
                             }
                           }
                           big = pattern(kLarge, 6);
                           comm.send(big.data(), big.size(), DataType::kUint32, 1, 3);
                         })),
            "");
}

INSTANTIATE_TEST_SUITE_P(Transports, P2pLarge, everyP2pTransport(),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace braid::testing
