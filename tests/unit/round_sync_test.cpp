// Whom a rank names when a round cannot complete (algorithms/host/round_sync.hpp): three ranks' fabrics over a
// memory arena, rank 2 waiting in a round its peers never reach. A peer that broke its communicator on an error from
// elsewhere is not the cause: the peer that failed outright is, and it is the one named.
#include "algorithms/host/round_sync.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/local_fabric.hpp"
#include "transport/memory/memory_local_group.hpp"

namespace braid::host {
namespace {

constexpr int kRanks = 3;

class Fabrics {
 public:
  Fabrics()
      : layout_(transport::FabricLayout::compute(kRanks, 4096, 4096)),
        arena_(std::make_shared<transport::MemoryArena>(kRanks, layout_.regionBytes)) {
    for (int r = 0; r < kRanks; ++r) {
      fabrics_.push_back(
          std::make_unique<transport::LocalFabric>(std::make_unique<transport::MemoryLocalGroup>(arena_, r), layout_));
    }
  }

  transport::LocalFabric& operator[](int r) { return *fabrics_[r]; }

  /// Rank 2's first round of call #0, which no peer reaches: the error it ends with.
  Error exchangeOnRank2() {
    OpEnv env;
    env.context = CallContext{.rank = 2, .peer = -1, .op = "allreduce", .seq = 0};
    env.timeoutSeconds = 10;
    std::atomic<bool> aborted{false};
    env.aborted = &aborted;
    std::uint32_t round = 0;
    RoundSync sync(*fabrics_[2], round, describeCall(Collective::kAllreduce, 0, DataType::kFloat32, 1), env);
    try {
      sync.exchange();
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "the round completed without its peers";
    return Error(ErrorCode::kInternal, "no error");
  }

 private:
  transport::FabricLayout layout_;
  std::shared_ptr<transport::MemoryArena> arena_;
  std::vector<std::unique_ptr<transport::LocalFabric>> fabrics_;
};

TEST(RoundSyncBlame, APeerThatBrokeOnAnotherPeersFailureNamesThatPeer) {
  Fabrics f;
  f[1].markAborted();                        // the cause
  f[0].markBroken(0, ErrorCode::kPeerLost);  // broke on it, as rank 0 would
  const Error e = f.exchangeOnRank2();
  EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
  EXPECT_EQ(e.context().peer, 1) << e.what();
  EXPECT_NE(std::string(e.what()).find("peer 1 aborted"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("waited for peer 0"), std::string::npos) << e.what();
}

TEST(RoundSyncBlame, APeerThatBrokeWithNoOtherFailureIsNamedItself) {
  Fabrics f;
  f[0].markBroken(0, ErrorCode::kTimeout);
  const Error e = f.exchangeOnRank2();
  EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
  EXPECT_EQ(e.context().peer, 0) << e.what();
  EXPECT_NE(std::string(e.what()).find("peer 0 failed collective #0 with Timeout"), std::string::npos) << e.what();
}

TEST(RoundSyncBlame, APeerThatFailedOutrightIsNamedItself) {
  Fabrics f;
  f[0].markAborted();
  f[1].markBroken(0, ErrorCode::kPeerLost);  // broke on rank 0's abort: not a cause either way
  const Error e = f.exchangeOnRank2();
  EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
  EXPECT_EQ(e.context().peer, 0) << e.what();
  EXPECT_NE(std::string(e.what()).find("peer 0 aborted"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace braid::host
