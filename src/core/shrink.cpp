// Communicator::shrink: the survivors of a lost peer agree on who is gone and form a new communicator.
//
// The old communicator's store may have died with its rank 0, so the survivors talk over what still joins them:
// point-to-point messages of the old communicator's transport among live peers. Two rounds, each an exchange of
// "who I know is lost" with every peer not known lost, the union kept: after the first every survivor knows what
// any survivor knew, after the second they hold the same set (unless another peer fails meanwhile, which makes the
// new communicator's creation fail rather than split). The lowest survivor then serves a fresh store, sends its
// address and secret to the others, and all join it as a new communicator.
#include <algorithm>
#include <array>
#include <climits>
#include <cstring>

#include "base/error.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/unique_id.hpp"
#include "braid/braid.hpp"
#include "core/communicator_impl.hpp"
#include "core/create.hpp"

namespace braid {

namespace {

// Tags no collective uses; a program's own messages with these tags, in flight during a shrink, would be taken.
constexpr int kLostTag = INT_MIN + 0x5348;
constexpr int kStoreTag = INT_MIN + 0x5349;
constexpr std::size_t kAddressBytes = 512;

struct ShrinkRendezvous {
  std::unique_ptr<bootstrap::TcpStoreServer> server;  // at the new rank 0
};

}  // namespace

std::unique_ptr<Communicator> Communicator::shrink() {
  core::CommunicatorImpl& impl = *impl_;
  Engine& engine = impl.engine();
  const int n = size();
  const int me = rank();
  const OpEnv env = impl.internalEnv("shrink");
  std::vector<std::uint8_t> lost(static_cast<std::size_t>(n), 0);
  for (int r = 0; r < n; ++r) lost[r] = r != me && !engine.peerFailure(r).empty();

  for (int round = 0; round < 2; ++round) {
    std::vector<std::uint8_t> merged = lost;
    for (int p = 0; p < n; ++p) {
      if (p == me || lost[p]) continue;
      std::vector<std::uint8_t> theirs(static_cast<std::size_t>(n), 0);
      const std::vector<P2pOp> ops = {
          {P2pOp::Kind::kSend, p, lost.data(), lost.size(), DataType::kUint8, kLostTag},
          {P2pOp::Kind::kRecv, p, theirs.data(), theirs.size(), DataType::kUint8, kLostTag}};
      try {
        engine.pointToPoint(ops, env);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kPeerLost && e.code() != ErrorCode::kTimeout) throw;
        merged[p] = 1;  // it died (or stopped answering) during the shrink
        continue;
      }
      for (int r = 0; r < n; ++r) merged[r] = merged[r] || theirs[r];
    }
    lost = std::move(merged);
  }

  std::vector<int> survivors;
  for (int r = 0; r < n; ++r) {
    if (!lost[r]) survivors.push_back(r);
  }
  const int newRank = static_cast<int>(std::find(survivors.begin(), survivors.end(), me) - survivors.begin());
  const int newRoot = survivors.front();
  auto keep = std::make_shared<ShrinkRendezvous>();
  std::array<char, kAddressBytes> where{};
  if (me == newRoot) {
    const std::string token = bootstrap::randomToken() + bootstrap::randomToken();
    keep->server = bootstrap::serveStoreHere(impl.settings().ifname, token);
    const std::string text = keep->server->address().toString() + "\n" + token;
    std::memcpy(where.data(), text.data(), std::min(text.size(), where.size() - 1));
    for (int p : survivors) {
      if (p == me) continue;
      const std::vector<P2pOp> ops = {{P2pOp::Kind::kSend, p, where.data(), where.size(), DataType::kUint8, kStoreTag}};
      engine.pointToPoint(ops, env);
    }
  } else {
    const std::vector<P2pOp> ops = {
        {P2pOp::Kind::kRecv, newRoot, where.data(), where.size(), DataType::kUint8, kStoreTag}};
    engine.pointToPoint(ops, env);
  }
  const std::string text(where.data(), strnlen(where.data(), where.size()));
  const auto newline = text.find('\n');
  if (newline == std::string::npos) {
    fail(ErrorCode::kInternal, ErrorContext{.rank = me, .peer = newRoot, .op = "shrink"},
         "malformed store address from rank ", newRoot);
  }
  const Settings& settings = impl.settings();
  auto store = std::make_shared<bootstrap::TcpStoreClient>(
      tcp::Address::parse(text.substr(0, newline)), text.substr(newline + 1), Deadline::after(settings.timeoutSeconds),
      settings.timeoutSeconds);
  return core::joinOverStore(std::move(store), std::move(keep), newRank, static_cast<int>(survivors.size()), settings);
}

}  // namespace braid
