// Large point-to-point messages between ranks of one host move in one copy (algorithms/host/p2p.hpp): the receiver
// reads them from the sender's memory and answers. Two ranks as threads over a memory arena: a receiver that will
// not read answers so, and the message and the later ones to it cross the ring whole and in order; smaller messages
// never ask. A send that fails is read by no one once it returned: withdrawn before its receiver took it, waited
// for while its receiver reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/host/p2p.hpp"
#include "base/error.hpp"
#include "transport/local_fabric.hpp"
#include "transport/memory/memory_local_group.hpp"

namespace braid::host {
namespace {

constexpr std::size_t kRingBytes = 64 << 10;

std::vector<std::uint32_t> counting(std::size_t n, std::uint32_t from) {
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from * 1000003u + static_cast<std::uint32_t>(i);
  return v;
}

struct Pair {
  explicit Pair(bool senderReads, bool receiverReads)
      : layout(transport::FabricLayout::compute(2, 4096, kRingBytes)),
        arena(std::make_shared<transport::MemoryArena>(2, layout.regionBytes)) {
    for (int r = 0; r < 2; ++r) {
      fabrics.push_back(
          std::make_unique<transport::LocalFabric>(std::make_unique<transport::MemoryLocalGroup>(arena, r), layout));
    }
    engines.push_back(std::make_unique<P2pEngine>(*fabrics[0], senderReads));
    engines.push_back(std::make_unique<P2pEngine>(*fabrics[1], receiverReads));
  }

  /// Rank 0 sends `sizes` (one message each, tags 0, 1, ...) in one group, rank 1 receives them one call at a time;
  /// "" when each arrived whole.
  std::string exchange(const std::vector<std::size_t>& sizes) {
    std::vector<std::vector<std::uint32_t>> out;
    std::vector<P2pOp> sends;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      out.push_back(counting(sizes[i], static_cast<std::uint32_t>(i + 1)));
      sends.push_back(
          P2pOp{P2pOp::Kind::kSend, 1, out.back().data(), sizes[i], DataType::kUint32, static_cast<int>(i)});
    }
    std::string wrong;
    std::exception_ptr sendFailed;
    std::thread sender([&] {
      try {
        engines[0]->run(sends, env(0));
      } catch (...) {
        sendFailed = std::current_exception();
      }
    });
    try {
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        std::vector<std::uint32_t> in(sizes[i], 0);
        const P2pOp recv{P2pOp::Kind::kRecv, 0, in.data(), in.size(), DataType::kUint32, static_cast<int>(i)};
        engines[1]->run({&recv, 1}, env(1));
        if (in != out[i]) wrong += "message " + std::to_string(i) + " arrived wrong; ";
      }
    } catch (const std::exception& e) {
      wrong += std::string("receiving: ") + e.what() + "; ";
    }
    sender.join();
    if (sendFailed) {
      try {
        std::rethrow_exception(sendFailed);
      } catch (const std::exception& e) {
        wrong += std::string("sending: ") + e.what();
      }
    }
    return wrong;
  }

  /// Rank 1's last answer to rank 0: {ticket, refused}.
  std::pair<std::uint32_t, bool> answer() {
    const std::uint32_t a = fabrics[1]->singleCopyAnswer(0, 1).load();
    return {a >> 3, (a & 7) == 2};
  }
  /// Whether rank 1 read rank 0's last single-copy message whole, and whether rank 0 withdrew it.
  bool read() { return (fabrics[1]->singleCopyAnswer(0, 1).load() & 7) == 1; }
  bool withdrawn() { return (fabrics[1]->singleCopyAnswer(0, 1).load() & 7) == 3; }

  static OpEnv env(int rank, double timeoutSeconds = 20) {
    OpEnv e;
    e.context = CallContext{.rank = rank, .peer = -1, .op = "p2p", .seq = -1};
    e.timeoutSeconds = timeoutSeconds;
    return e;
  }

  void send(std::vector<std::uint32_t>& data, int tag, const OpEnv& e) {
    const P2pOp op{P2pOp::Kind::kSend, 1, data.data(), data.size(), DataType::kUint32, tag};
    engines[0]->run({&op, 1}, e);
  }
  void receive(std::vector<std::uint32_t>& data, int tag) {
    const P2pOp op{P2pOp::Kind::kRecv, 0, data.data(), data.size(), DataType::kUint32, tag};
    engines[1]->run({&op, 1}, env(1));
  }

  transport::FabricLayout layout;
  std::shared_ptr<transport::MemoryArena> arena;
  std::vector<std::unique_ptr<transport::LocalFabric>> fabrics;
  std::vector<std::unique_ptr<P2pEngine>> engines;
};

constexpr std::size_t kLarge = kRingBytes;  // elements: four rings' worth of bytes
constexpr std::size_t kSmall = 1000;

TEST(P2pSingleCopy, LargeMessagesAreReadFromTheSenderAndAnswered) {
  Pair pair(true, true);
  EXPECT_EQ(pair.exchange({kLarge, kSmall, kLarge + 3}), "");
  // Two questions (the small message asked none), both answered as read.
  EXPECT_EQ(pair.answer(), std::make_pair(2u, false));
}

TEST(P2pSingleCopy, AReceiverThatWillNotReadGetsTheMessagesThroughTheRing) {
  Pair pair(true, false);
  EXPECT_EQ(pair.exchange({kLarge, kLarge + 1, kSmall, kLarge}), "");
  // The first large message asked and was refused; the sender asked no more.
  EXPECT_EQ(pair.answer(), std::make_pair(1u, true));
}

TEST(P2pSingleCopy, ASenderThatWillNotBeReadNeverAsks) {
  Pair pair(false, true);
  EXPECT_EQ(pair.exchange({kLarge, kLarge}), "");
  EXPECT_EQ(pair.answer(), std::make_pair(0u, false));
}

TEST(P2pSingleCopy, ASendThatFailsBeforeItsReceiverTookItIsWithdrawnAndReadByNoOne) {
  Pair pair(true, true);
  std::vector<std::uint32_t> large = counting(kLarge, 1);
  std::vector<std::uint32_t> in(kLarge, 0);
  const auto sendTimesOut = [&](int tag) {
    try {
      pair.send(large, tag, Pair::env(0, 0.2));
      ADD_FAILURE() << "a send no one received completed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
    }
  };
  const auto receiveFindsWithdrawn = [&](int tag) {
    try {
      pair.receive(in, tag);
      ADD_FAILURE() << "a withdrawn message was received";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
      EXPECT_NE(std::string(e.what()).find("peer 0 withdrew its message with tag " + std::to_string(tag)),
                std::string::npos)
          << e.what();
    }
  };
  // No receive is posted: the send times out with its question unanswered, and its program reuses the buffer.
  sendTimesOut(0);
  EXPECT_TRUE(pair.withdrawn());
  std::fill(large.begin(), large.end(), 0xdeadbeefu);
  receiveFindsWithdrawn(0);
  EXPECT_EQ(std::count(in.begin(), in.end(), 0xdeadbeefu), 0);
  // The pair goes on: a withdrawn message no receive waited for yet is kept aside, and later ones arrive whole.
  sendTimesOut(3);
  std::vector<std::uint32_t> small = counting(kSmall, 7);
  pair.send(small, 4, Pair::env(0));
  std::vector<std::uint32_t> got(kSmall, 0);
  pair.receive(got, 4);
  EXPECT_EQ(got, small);
  // The receive that takes the withdrawn message kept aside fails, whenever it comes.
  receiveFindsWithdrawn(3);
  EXPECT_EQ(pair.exchange({kLarge, kSmall, kLarge}), "");
  EXPECT_EQ(pair.answer(), std::make_pair(4u, false));
}

TEST(P2pSingleCopy, ASendThatFailsWhileItsReceiverReadsReturnsOnlyOnceTheReadIsDone) {
  Pair pair(true, true);
  // Large enough that the copy takes milliseconds, while the sender learns of its abort in microseconds.
  constexpr std::size_t kHuge = std::size_t{16} << 20;
  std::vector<std::uint32_t> out = counting(kHuge, 3);
  const std::vector<std::uint32_t> expected = out;
  std::atomic<bool> aborted{false};
  OpEnv senderEnv = Pair::env(0);
  senderEnv.aborted = &aborted;
  std::string sendError;
  std::pair<std::uint32_t, bool> answerAtReturn;
  bool readAtReturn = false;
  std::thread sender([&] {
    try {
      pair.send(out, 0, senderEnv);
    } catch (const Error& e) {
      sendError = e.what();
    }
    answerAtReturn = pair.answer();
    readAtReturn = pair.read();
    // The program has its buffer back and writes it.
    std::fill(out.begin(), out.end(), 0xdeadbeefu);
  });
  const auto waitFor = [](auto done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    return done();
  };
  ASSERT_TRUE(waitFor([&] { return pair.fabrics[1]->ringAvailable(0) > 0; }));  // the question was asked
  std::vector<std::uint32_t> in(kHuge, 0);
  std::string receiveError;
  std::thread receiver([&] {
    try {
      pair.receive(in, 0);
    } catch (const Error& e) {
      receiveError = e.what();
    }
  });
  // The receiver took the header: it reads now. The sender fails meanwhile.
  const bool taken = waitFor([&] { return pair.fabrics[1]->ringAvailable(0) == 0; });
  aborted.store(true);
  pair.engines[0]->wake();
  sender.join();
  receiver.join();
  ASSERT_TRUE(taken);
  // (A copy that ended before the sender saw its abort completed the send.)
  EXPECT_TRUE(sendError.empty() || sendError.find("aborted") != std::string::npos) << sendError;
  EXPECT_EQ(answerAtReturn.first, 1u) << "the send returned before its receiver answered";
  EXPECT_TRUE(readAtReturn) << "the send returned before its receiver read the message";
  EXPECT_EQ(receiveError, "");
  EXPECT_TRUE(in == expected) << std::count(in.begin(), in.end(), 0xdeadbeefu) << " words read after the send returned";
}

}  // namespace
}  // namespace braid::host
