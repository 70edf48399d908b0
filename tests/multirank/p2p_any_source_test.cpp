// Receives from any source (kAnySource, MPI_ANY_SOURCE): each takes one message with its tag from whichever rank sent
// it and says whose it was, messages of one sender still in order, over every transport.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "multirank/p2p_transports.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

using Kind = P2pOp::Kind;
using P2pAnySource = P2pOverTransports;

std::uint32_t seedOf(int sender, int k) { return static_cast<std::uint32_t>(100 * sender + k); }

// Every other rank sends rank 0 three messages with one tag, and rank 0 one to itself; rank 0 takes all of them with
// blocking receives from any source. Each message is taken once, the sender named is the one whose payload it is, and
// one sender's messages come in the order it sent them.
TEST_P(P2pAnySource, EveryMessageIsTakenOnceFromItsSenderInOrder) {
  EXPECT_EQ(failures(run(4,
                         [](Communicator& comm) {
                           constexpr int kEach = 3;
                           const std::size_t n = 5000;
                           if (comm.rank() != 0) {
                             for (int k = 0; k < kEach; ++k) {
                               std::vector<std::uint32_t> out = pattern(n, seedOf(comm.rank(), k));
                               comm.send(out.data(), n, DataType::kUint32, 0, 7);
                             }
                             return;
                           }
                           std::vector<std::uint32_t> own = pattern(n, seedOf(0, 0));
                           Work toSelf = comm.sendAsync(own.data(), n, DataType::kUint32, 0, 7);
                           std::map<int, int> taken;  // per sender, how many so far
                           for (int i = 0; i < 1 + kEach * (comm.size() - 1); ++i) {
                             std::vector<std::uint32_t> in(n, 0);
                             const int from = comm.recv(in.data(), n, DataType::kUint32, kAnySource, 7);
                             if (from < 0 || from >= comm.size()) {
                               throw std::runtime_error("receive " + std::to_string(i) + " named rank " +
                                                        std::to_string(from));
                             }
                             const int k = taken[from]++;
                             expectPattern(in, seedOf(from, k),
                                           "message " + std::to_string(k) + " of rank " + std::to_string(from));
                           }
                           toSelf.wait();
                           if (taken[0] != 1) throw std::runtime_error("the message to itself was not taken once");
                           for (int r = 1; r < comm.size(); ++r) {
                             if (taken[r] != kEach) throw std::runtime_error("rank " + std::to_string(r) + " short");
                           }
                         })),
            "");
}

// Receives match in the order they were posted, named ones and those from any source alike: rank 0 posts a receive
// from any source and then one from rank 1, both with tag 1; rank 1 sends two messages with tag 1 and rank 2 one
// with tag 2, which a third receive from any source takes. The first message of rank 1 is the first receive's.
TEST_P(P2pAnySource, ReceivesMatchInPostingOrderBesideNamedOnes) {
  EXPECT_EQ(failures(run(3,
                         [](Communicator& comm) {
                           const std::size_t n = 3000;
                           if (comm.rank() == 1) {
                             std::vector<std::uint32_t> a = pattern(n, 11), b = pattern(n, 12);
                             comm.send(a.data(), n, DataType::kUint32, 0, 1);
                             comm.send(b.data(), n, DataType::kUint32, 0, 1);
                             return;
                           }
                           if (comm.rank() == 2) {
                             std::vector<std::uint32_t> c = pattern(n, 21);
                             comm.send(c.data(), n, DataType::kUint32, 0, 2);
                             return;
                           }
                           std::vector<std::uint32_t> any1(n), named(n), any2(n);
                           Work first = comm.recvAsync(any1.data(), n, DataType::kUint32, kAnySource, 1);
                           Work second = comm.recvAsync(named.data(), n, DataType::kUint32, 1, 1);
                           Work third = comm.recvAsync(any2.data(), n, DataType::kUint32, kAnySource, 2);
                           if (first.source() != -1 && !first.test()) throw std::runtime_error("source before done");
                           for (Work* w : {&third, &second, &first}) w->wait();
                           expectPattern(any1, 11, "the receive from any source, tag 1");
                           expectPattern(named, 12, "the receive from rank 1");
                           expectPattern(any2, 21, "the receive from any source, tag 2");
                           if (first.source() != 1 || third.source() != 2 || second.source() != 1) {
                             throw std::runtime_error("sources " + std::to_string(first.source()) + ", " +
                                                      std::to_string(second.source()) + ", " +
                                                      std::to_string(third.source()));
                           }
                         })),
            "");
}

// A message of another size fails the receive with Mismatch naming its sender; a send from any source is refused.
TEST_P(P2pAnySource, AMessageOfAnotherSizeIsNamedAndASendNeedsAPeer) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           std::vector<std::uint32_t> buf(10, 0);
                           if (comm.rank() == 1) {
                             comm.send(buf.data(), 10, DataType::kUint32, 0, 3);
                             return;
                           }
                           try {
                             comm.send(buf.data(), 10, DataType::kUint32, kAnySource, 3);
                             throw std::runtime_error("a send to any source was accepted");
                           } catch (const Error& e) {
                             if (e.code() != ErrorCode::kInvalidArgument) throw;
                           }
                           try {
                             comm.recv(buf.data(), 5, DataType::kUint32, kAnySource, 3);
                             throw std::runtime_error("a receive of 20 bytes took a message of 40");
                           } catch (const Error& e) {
                             const std::string text = e.what();
                             if (e.code() != ErrorCode::kMismatch || e.context().peer != 1 ||
                                 text.find("40 bytes") == std::string::npos) {
                               throw std::runtime_error("the mismatch said: " + text);
                             }
                           }
                         })),
            "");
}

// A receive from any source whose message comes after more than the transport keeps aside for a peer unasked (TCP
// stops reading a peer past 64 MiB until a receive from it is posted): it still gets it, and the large message then
// lands whole.
TEST_P(P2pAnySource, AMessageBehindMuchKeptAsideIsStillTaken) {
  EXPECT_EQ(failures(run(
                2,
                [](Communicator& comm) {
                  const std::size_t big = (80u << 20) / sizeof(std::uint32_t);
                  if (comm.rank() == 1) {
                    std::vector<std::uint32_t> large = pattern(big, 5), small = pattern(1, 6);
                    Work sent = comm.sendAsync(large.data(), big, DataType::kUint32, 0, 1);
                    comm.send(small.data(), 1, DataType::kUint32, 0, 2);
                    sent.wait();
                    return;
                  }
                  std::vector<std::uint32_t> small(1), large(big);
                  if (comm.recv(small.data(), 1, DataType::kUint32, kAnySource, 2) != 1) {
                    throw std::runtime_error("the small message named another sender");
                  }
                  expectPattern(small, 6, "the small message");
                  comm.recv(large.data(), big, DataType::kUint32, 1, 1);
                  expectPattern(large, 5, "the large message");
                },
                60)),
            "");
}

// A group that failed while a message was being read into one of its receives: the rest of that message goes
// nowhere (the receive's buffer is gone), and the next call between the pair gets its own message whole.
TEST_P(P2pAnySource, AFailedGroupsHalfReadMessageGoesNowhere) {
  EXPECT_EQ(failures(run(3,
                         [](Communicator& comm) {
                           const std::size_t big = (1u << 20) / sizeof(std::uint32_t);
                           if (comm.rank() == 1) {
                             std::vector<std::uint32_t> large = pattern(big, 1), last = pattern(10, 9);
                             comm.send(large.data(), big, DataType::kUint32, 0, 1);
                             comm.send(last.data(), 10, DataType::kUint32, 0, 9);
                             return;
                           }
                           if (comm.rank() == 2) {
                             std::vector<std::uint32_t> two = pattern(2, 2);
                             comm.send(two.data(), 2, DataType::kUint32, 0, 2);
                             return;
                           }
                           {
                             std::vector<std::uint32_t> large(big), one(1);
                             try {
                               comm.group({op(Kind::kRecv, 1, large, 1), op(Kind::kRecv, kAnySource, one, 2)});
                               throw std::runtime_error("a receive of 4 bytes took 8");
                             } catch (const Error& e) {
                               if (e.code() != ErrorCode::kMismatch) throw;
                             }
                           }  // the group's buffers are gone
                           std::vector<std::uint32_t> last(10);
                           comm.recv(last.data(), 10, DataType::kUint32, 1, 9);
                           expectPattern(last, 9, "the message after the failed group");
                         })),
            "");
}

// A blocking receive from any source that must fail with PeerLost saying `says` (and naming `peer`, unless -1);
// returns how long it waited.
double lostWhileWaitingFromAnySource(Communicator& comm, const std::string& says, int peer) {
  const auto start = std::chrono::steady_clock::now();
  std::uint32_t x = 0;
  try {
    comm.recv(&x, 1, DataType::kUint32, kAnySource, 9);
    throw std::runtime_error("the receive completed");
  } catch (const Error& e) {
    const std::string text = e.what();
    if (e.code() != ErrorCode::kPeerLost || (peer >= 0 && e.context().peer != peer) ||
        text.find(says) == std::string::npos) {
      throw std::runtime_error("the receive failed otherwise: " + text);
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A receive from any source waits on every peer (algorithms/host/any_source.hpp). A peer that fails (here: aborts)
// may have been its sender: the receive fails with PeerLost naming it, while the other peer still lives.
TEST_P(P2pAnySource, APeerThatFailsFailsAWaitingReceiveFromAnySource) {
  EXPECT_EQ(failures(run(3,
                         [](Communicator& comm) {
                           if (comm.rank() == 2) {
                             std::this_thread::sleep_for(std::chrono::milliseconds(300));
                             comm.abort();
                             return;
                           }
                           if (comm.rank() == 1) {
                             std::this_thread::sleep_for(std::chrono::seconds(6));
                             return;
                           }
                           const double took = lostWhileWaitingFromAnySource(comm, "may have been that peer's", 2);
                           if (took > 5) throw std::runtime_error("failed after " + std::to_string(took) + " s");
                         })),
            "");
}

// Peers that leave after their last call fail nothing while another may still send; once every peer has left, no
// rank is left to send the message and the receive fails with PeerLost saying so, not at the timeout.
TEST_P(P2pAnySource, AReceiveFromAnySourceFailsOnceEveryPeerLeft) {
  EXPECT_EQ(failures(run(3,
                         [](Communicator& comm) {
                           if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(1));
                           if (comm.rank() != 0) return;  // leaves: destroys its communicator
                           const double took = lostWhileWaitingFromAnySource(comm, "every peer left", -1);
                           if (took < 0.9 || took > 10) {
                             throw std::runtime_error("failed after " + std::to_string(took) + " s");
                           }
                         })),
            "");
}

INSTANTIATE_TEST_SUITE_P(Transports, P2pAnySource, everyP2pTransport(),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace braid::testing
