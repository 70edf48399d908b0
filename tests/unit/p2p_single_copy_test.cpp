// Large point-to-point messages between ranks of one host move in one copy (algorithms/host/p2p.hpp): the receiver
// reads them from the sender's memory and answers. Two ranks as threads over a memory arena: a receiver that will
// not read answers so, and the message and the later ones to it cross the ring whole and in order; smaller messages
// never ask.
#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/host/p2p.hpp"
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
    return {a >> 1, (a & 1) != 0};
  }

  static OpEnv env(int rank) {
    OpEnv e;
    e.context = ErrorContext{.rank = rank, .peer = -1, .op = "p2p", .seq = -1};
    e.timeoutSeconds = 20;
    return e;
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

}  // namespace
}  // namespace braid::host
