// Nonblocking point-to-point calls progress together (algorithms/p2p_feed.hpp, core/p2p_group.cpp): calls
// posted while a group runs join it and each completes on its own, over every transport. Each of these patterns
// waited until the timeout when the calls ran one after another in issue order.
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
using P2pAsync = P2pOverTransports;

// Each rank posts a large send and then a blocking receive of its peer's: the receive joins the running send.
TEST_P(P2pAsync, CrossedSendThenReceiveCompletes) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           const int peer = 1 - comm.rank();
                           const std::size_t n = (16u << 20) / sizeof(std::uint32_t);
                           std::vector<std::uint32_t> out = pattern(n, comm.rank()), in(n, 0);
                           Work sent = comm.sendAsync(out.data(), n, DataType::kUint32, peer, 3);
                           comm.recv(in.data(), n, DataType::kUint32, peer, 3);
                           sent.wait();
                           expectPattern(in, peer, "received");
                         })),
            "");
}

// A call completes when its own operations do, not when the group it joined does: rank 0's send must complete
// while its earlier receive still waits, because rank 1 answers that receive only after a later send of rank 0.
TEST_P(P2pAsync, EachCallCompletesOnItsOwn) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           std::vector<std::uint32_t> a = pattern(300000, 1), b = pattern(300000, 2);
                           std::vector<std::uint32_t> answer(300000, 0);
                           if (comm.rank() == 0) {
                             Work reply = comm.groupAsync({op(Kind::kRecv, 1, answer, 1)});
                             Work first = comm.groupAsync({op(Kind::kSend, 1, a, 0)});
                             first.wait();
                             comm.send(b.data(), b.size(), DataType::kUint32, 1, 2);
                             reply.wait();
                             expectPattern(answer, 3, "the reply");
                           } else {
                             std::vector<std::uint32_t> gotA(a.size()), gotB(b.size());
                             comm.recv(gotA.data(), gotA.size(), DataType::kUint32, 0, 0);
                             comm.recv(gotB.data(), gotB.size(), DataType::kUint32, 0, 2);
                             expectPattern(gotA, 1, "first");
                             expectPattern(gotB, 2, "second");
                             std::vector<std::uint32_t> reply = pattern(answer.size(), 3);
                             comm.send(reply.data(), reply.size(), DataType::kUint32, 0, 1);
                           }
                         })),
            "");
}

// Hundreds of calls around a ring, receives posted in the reverse order of the sends' tags, sizes from one element
// to a few rings' worth: what joins is matched by (peer, tag) and every payload lands where its receive said.
TEST_P(P2pAsync, ManyCallsAroundARingJoinAndLandInPlace) {
  EXPECT_EQ(
      failures(run(3,
                   [](Communicator& comm) {
                     constexpr int kCalls = 300;
                     const int next = (comm.rank() + 1) % comm.size();
                     const int prev = (comm.rank() + comm.size() - 1) % comm.size();
                     auto sizeOf = [](int tag) { return static_cast<std::size_t>(1 + (tag * 7919) % 40000); };
                     std::vector<std::vector<std::uint32_t>> out(kCalls), in(kCalls);
                     std::vector<Work> works;
                     for (int tag = 0; tag < kCalls; ++tag) {
                       out[tag] = pattern(sizeOf(tag), static_cast<std::uint32_t>(comm.rank() * kCalls + tag));
                       works.push_back(comm.sendAsync(out[tag].data(), out[tag].size(), DataType::kUint32, next, tag));
                     }
                     for (int tag = kCalls - 1; tag >= 0; --tag) {
                       in[tag].assign(sizeOf(tag), 0);
                       works.push_back(comm.recvAsync(in[tag].data(), in[tag].size(), DataType::kUint32, prev, tag));
                     }
                     for (Work& w : works) w.wait();
                     for (int tag = 0; tag < kCalls; ++tag) {
                       expectPattern(in[tag], static_cast<std::uint32_t>(prev * kCalls + tag),
                                     "tag " + std::to_string(tag));
                     }
                   })),
      "");
}

// A collective queued behind a running group runs while the group's send is still pending, and the receive queued
// behind the collective does not pass it: rank 1 answers only after the allreduce.
TEST_P(P2pAsync, ACollectiveBehindAGroupKeepsItsPlace) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           std::vector<std::uint32_t> big = pattern(1 << 20, 7), got(1 << 20, 0);
                           std::uint64_t sum = static_cast<std::uint64_t>(comm.rank()) + 1;
                           if (comm.rank() == 0) {
                             Work w = comm.sendAsync(big.data(), big.size(), DataType::kUint32, 1, 0);
                             Work reduced = comm.allreduceAsync(&sum, &sum, 1, DataType::kUint64, ReduceKind::kSum);
                             Work after = comm.recvAsync(got.data(), got.size(), DataType::kUint32, 1, 1);
                             w.wait();
                             reduced.wait();
                             after.wait();
                             expectPattern(got, 8, "after the allreduce");
                           } else {
                             comm.recv(got.data(), got.size(), DataType::kUint32, 0, 0);
                             expectPattern(got, 7, "before the allreduce");
                             comm.allreduce(&sum, &sum, 1, DataType::kUint64, ReduceKind::kSum);
                             std::vector<std::uint32_t> reply = pattern(got.size(), 8);
                             comm.send(reply.data(), reply.size(), DataType::kUint32, 0, 1);
                           }
                           if (sum != 3) throw std::runtime_error("allreduce gave " + std::to_string(sum));
                         })),
            "");
}

// A large message flowing between two ranks that both queued a collective behind it: the collective runs inside each
// rank's group while the message moves (p2p_beside_collectives_test.cpp has more).
TEST_P(P2pAsync, ALargeMessageFlowingAheadOfACollectiveIsNoDeadlock) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           const int peer = 1 - comm.rank();
                           std::vector<std::uint32_t> got(16 << 20, 0), mine = pattern(got.size(), comm.rank());
                           std::uint64_t sum = 1;
                           Work r = comm.recvAsync(got.data(), got.size(), DataType::kUint32, peer, 5);
                           Work s = comm.sendAsync(mine.data(), mine.size(), DataType::kUint32, peer, 5);
                           comm.allreduce(&sum, &sum, 1, DataType::kUint64, ReduceKind::kSum);
                           r.wait();
                           s.wait();
                           expectPattern(got, static_cast<std::uint32_t>(peer), "the message");
                           if (sum != 2) throw std::runtime_error("allreduce gave " + std::to_string(sum));
                         })),
            "");
}

// A call that never completes keeps its own deadline inside a group whose other calls progress: it fails with
// Timeout naming its operation, in about its timeout, while the calls that joined it completed.
TEST_P(P2pAsync, AStuckCallTimesOutOnItsOwnDeadline) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           std::vector<std::uint32_t> never(16, 0), ping(1000);
                           if (comm.rank() == 0) {
                             const auto start = std::chrono::steady_clock::now();
                             Work stuck = comm.groupAsync({op(Kind::kRecv, 1, never, 9)},
                                                          CallOptions{.timeout = std::chrono::milliseconds(1500)});
                             for (int i = 0; i < 5; ++i) {
                               ping = pattern(ping.size(), i);
                               comm.send(ping.data(), ping.size(), DataType::kUint32, 1, 1);
                               comm.recv(ping.data(), ping.size(), DataType::kUint32, 1, 2);
                               expectPattern(ping, 100 + i, "pong");
                             }
                             try {
                               stuck.wait();
                               throw std::runtime_error("the receive nobody answered completed");
                             } catch (const Error& e) {
                               const double took =
                                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                               if (e.code() != ErrorCode::kTimeout) throw;
                               const std::string text = e.what();
                               if (text.find("receive from peer 1 (tag 9, 64 bytes)") == std::string::npos) {
                                 throw std::runtime_error("the timeout does not name the call: " + text);
                               }
                               if (took > 10)
                                 throw std::runtime_error("timed out after " + std::to_string(took) + " s");
                             }
                           } else {
                             for (int i = 0; i < 5; ++i) {
                               comm.recv(ping.data(), ping.size(), DataType::kUint32, 0, 1);
                               expectPattern(ping, i, "ping");
                               ping = pattern(ping.size(), 100 + i);
                               comm.send(ping.data(), ping.size(), DataType::kUint32, 0, 2);
                             }
                             // Stay until rank 0 timed out: leaving would end its receive with PeerLost first.
                             std::this_thread::sleep_for(std::chrono::seconds(4));
                           }
                         })),
            "");
}

// A peer that leaves once its messages are through fails nothing: rank 0's group still waits for rank 2 when rank 1,
// done with it, exits; the completed operations with rank 1 are no reason for PeerLost (they once were, over shared
// memory, which made a ring of hundreds of calls fail now and then in CI).
TEST_P(P2pAsync, APeerThatLeftAfterItsMessagesFailsNothing) {
  EXPECT_EQ(failures(run(
                3,
                [](Communicator& comm) {
                  std::vector<std::uint32_t> one(1000), two(1000), three(1000);
                  if (comm.rank() == 0) {
                    std::vector<std::uint32_t> mine = pattern(one.size(), 5);
                    comm.group({op(Kind::kSend, 1, mine, 2), op(Kind::kRecv, 1, one, 1), op(Kind::kRecv, 2, three, 3)});
                    expectPattern(one, 1, "from rank 1");
                    expectPattern(three, 2, "from rank 2");
                  } else if (comm.rank() == 1) {
                    std::vector<std::uint32_t> mine = pattern(one.size(), 1);
                    comm.send(mine.data(), mine.size(), DataType::kUint32, 0, 1);
                    comm.recv(two.data(), two.size(), DataType::kUint32, 0, 2);
                    expectPattern(two, 5, "from rank 0");
                  } else {
                    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // rank 1 has left by now
                    std::vector<std::uint32_t> mine = pattern(three.size(), 2);
                    comm.send(mine.data(), mine.size(), DataType::kUint32, 0, 3);
                  }
                })),
            "");
}

// A receive of another size fails its own call with Mismatch (as MPI's truncation error fails its request); the send
// that shares the group with it completes, and so do its peer's calls and the pair's later ones.
TEST_P(P2pAsync, AReceiveOfAnotherSizeFailsItsCallAlone) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           const std::size_t n = 1 << 20;
                           std::vector<std::uint32_t> big = pattern(n, 7), small(100, 0);
                           if (comm.rank() == 1) {
                             // The small message first: rank 0 meets it while its large one is on its way.
                             std::vector<std::uint32_t> fifty = pattern(50, 8);
                             comm.send(fifty.data(), fifty.size(), DataType::kUint32, 0, 2);
                             std::this_thread::sleep_for(std::chrono::milliseconds(100));
                             std::vector<std::uint32_t> got(n, 0);
                             comm.recv(got.data(), n, DataType::kUint32, 0, 1);
                             expectPattern(got, 7, "the large message");
                             comm.recv(got.data(), n, DataType::kUint32, 0, 3);
                             expectPattern(got, 9, "the message after the mismatch");
                             return;
                           }
                           Work sent = comm.sendAsync(big.data(), n, DataType::kUint32, 1, 1);
                           Work received = comm.recvAsync(small.data(), small.size(), DataType::kUint32, 1, 2);
                           std::string wrong;
                           try {
                             received.wait();
                             wrong += "a receive of twice the size completed; ";
                           } catch (const Error& e) {
                             if (e.code() != ErrorCode::kMismatch || e.context().peer != 1)
                               wrong += std::string("the receive: ") + e.what() + "; ";
                           }
                           try {
                             sent.wait();
                           } catch (const Error& e) {
                             wrong += std::string("the send: ") + e.what();
                           }
                           if (!wrong.empty()) throw std::runtime_error(wrong);
                           big = pattern(n, 9);
                           comm.send(big.data(), n, DataType::kUint32, 1, 3);
                         })),
            "");
}

// abort() from another thread ends every call of a fed group (the first and those that joined it) with Aborted, in
// milliseconds.
TEST_P(P2pAsync, AbortEndsEveryCallOfAGroup) {
  EXPECT_EQ(failures(run(2,
                         [](Communicator& comm) {
                           std::vector<std::uint32_t> a(1 << 20), b(1 << 20), c(16);
                           if (comm.rank() == 1) {
                             // Rank 1 sends nothing (a receive of its own would take rank 0's sends as unexpected
                             // messages, completing them); it stays while rank 0 aborts.
                             std::this_thread::sleep_for(std::chrono::seconds(1));
                             return;
                           }
                           std::vector<Work> works;
                           works.push_back(comm.recvAsync(a.data(), a.size(), DataType::kUint32, 1, 1));
                           works.push_back(comm.recvAsync(b.data(), b.size(), DataType::kUint32, 1, 2));
                           works.push_back(comm.groupAsync({op(Kind::kRecv, 1, c, 3), op(Kind::kRecv, 1, c, 4)}));
                           std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the group is running
                           const auto start = std::chrono::steady_clock::now();
                           std::thread aborter([&comm] { comm.abort(); });
                           std::string wrong;
                           for (std::size_t i = 0; i < works.size(); ++i) {
                             try {
                               works[i].wait();
                               wrong += "call " + std::to_string(i) + " of the aborted group completed; ";
                             } catch (const Error& e) {
                               if (e.code() != ErrorCode::kAborted)
                                 wrong += "call " + std::to_string(i) + ": " + e.what();
                             }
                           }
                           aborter.join();
                           if (!wrong.empty()) throw std::runtime_error(wrong);
                           const double took =
                               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                           if (took > 2) throw std::runtime_error("abort took " + std::to_string(took) + " s");
                         })),
            "");
}

INSTANTIATE_TEST_SUITE_P(Transports, P2pAsync, everyP2pTransport(),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace braid::testing
