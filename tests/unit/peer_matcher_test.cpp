// transport::PeerMatcher without a transport: pieces arrive before, after and while their receive is posted, in any
// order; mismatches are named; what is kept aside is counted and dropped when its call ends.
#include "transport/peer_matcher.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

namespace braid::transport {
namespace {

// Records what the matcher completes and fails, as a transport would.
struct Outcomes final : MatchOutcomes {
  explicit Outcomes(PeerMatcher& m) : matcher(m) {}
  void complete(NetOp& op) override {
    matcher.forget(op);
    op.state.store(NetOp::kDone);
    ++completed;
  }
  void failOp(NetOp& op, ErrorCode code, std::string text) override {
    matcher.forget(op);
    op.code = code;
    op.error = std::move(text);
    op.state.store(NetOp::kFailed);
  }
  PeerMatcher& matcher;
  int completed = 0;
};

CallDescriptor callOf(std::int64_t seq, std::uint64_t count = 8) {
  CallDescriptor c;
  c.seq = seq;
  c.collective = 1;
  c.count = count;
  return c;
}

void receive(NetOp& op, std::vector<std::byte>& into, MessageKind kind, std::int64_t key, std::uint32_t step,
             const CallDescriptor& call) {
  op.dir = NetOp::Dir::kRecv;
  op.peer = 3;
  op.kind = kind;
  op.key = key;
  op.step = step;
  op.call = call;
  op.data = into.data();
  op.bytes = into.size();
}

std::vector<std::byte> bytes(std::size_t n, int first) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(first + static_cast<int>(i));
  return v;
}

// Delivers `payload[offset, offset + length)` as one piece of the message `name`.
void deliver(PeerMatcher& m, Outcomes& out, const MessageName& name, const CallDescriptor& call,
             const std::vector<std::byte>& payload, std::size_t offset, std::size_t length) {
  const Piece piece{name, call, payload.size(), offset, static_cast<std::uint32_t>(length)};
  const PeerMatcher::Landing landing = m.arrive(piece, out);
  if (landing.target) std::copy_n(payload.begin() + static_cast<std::ptrdiff_t>(offset), length, landing.target);
  m.landed(landing, static_cast<std::uint32_t>(length), out);
}

TEST(PeerMatcher, APostedReceiveTakesItsPiecesDirectly) {
  PeerMatcher m(3, nullptr);
  Outcomes out(m);
  std::vector<std::byte> into(100);
  NetOp op;
  receive(op, into, MessageKind::kCollective, 7, 0, callOf(7));
  m.post(op, out);
  const auto payload = bytes(100, 1);
  deliver(m, out, {MessageKind::kCollective, 7, 0}, callOf(7), payload, 60, 40);
  EXPECT_EQ(op.state.load(), NetOp::kPending);
  deliver(m, out, {MessageKind::kCollective, 7, 0}, callOf(7), payload, 0, 60);
  EXPECT_EQ(op.state.load(), NetOp::kDone);
  EXPECT_EQ(into, payload);
  EXPECT_EQ(m.keptBytes(), 0u);
  EXPECT_FALSE(m.anyPosted());
}

TEST(PeerMatcher, PiecesThatCameFirstAreKeptUntilTheReceiveIsPosted) {
  PeerMatcher m(3, nullptr);
  Outcomes out(m);
  const auto payload = bytes(64, 9);
  deliver(m, out, {MessageKind::kPointToPoint, 5, 2}, {}, payload, 32, 32);
  deliver(m, out, {MessageKind::kPointToPoint, 5, 2}, {}, payload, 0, 32);
  EXPECT_EQ(m.keptBytes(), 64u);
  std::vector<std::byte> into(64);
  NetOp op;
  receive(op, into, MessageKind::kPointToPoint, 5, 2, {});
  m.post(op, out);
  EXPECT_EQ(op.state.load(), NetOp::kDone);
  EXPECT_EQ(into, payload);
  EXPECT_EQ(m.keptBytes(), 0u);
}

TEST(PeerMatcher, AReceivePostedWhileAPieceArrivesGetsItWhenItLands) {
  PeerMatcher m(3, nullptr);
  Outcomes out(m);
  const auto payload = bytes(48, 3);
  const MessageName name{MessageKind::kCollective, 2, 1};
  deliver(m, out, name, callOf(2), payload, 0, 16);  // whole, kept aside
  // The second piece's header arrived (it is being read into the stash) when the receive is posted.
  const Piece second{name, callOf(2), payload.size(), 16, 32};
  const PeerMatcher::Landing landing = m.arrive(second, out);
  ASSERT_NE(landing.target, nullptr);
  std::vector<std::byte> into(48);
  NetOp op;
  receive(op, into, MessageKind::kCollective, 2, 1, callOf(2));
  m.post(op, out);
  EXPECT_EQ(op.state.load(), NetOp::kPending);
  EXPECT_EQ(op.done, 16u);
  std::copy_n(payload.begin() + 16, 32, landing.target);
  m.landed(landing, 32, out);
  EXPECT_EQ(op.state.load(), NetOp::kDone);
  EXPECT_EQ(into, payload);
  EXPECT_EQ(m.keptBytes(), 0u);
}

TEST(PeerMatcher, AZeroByteMessageCompletesWhicheverCameFirst) {
  PeerMatcher m(3, nullptr);
  Outcomes out(m);
  std::vector<std::byte> none;
  NetOp early;
  receive(early, none, MessageKind::kCollective, 1, 0, callOf(1));
  m.post(early, out);
  EXPECT_EQ(early.state.load(), NetOp::kPending);
  deliver(m, out, {MessageKind::kCollective, 1, 0}, callOf(1), none, 0, 0);
  EXPECT_EQ(early.state.load(), NetOp::kDone);

  deliver(m, out, {MessageKind::kCollective, 1, 1}, callOf(1), none, 0, 0);
  NetOp late;
  receive(late, none, MessageKind::kCollective, 1, 1, callOf(1));
  m.post(late, out);
  EXPECT_EQ(late.state.load(), NetOp::kDone);
}

TEST(PeerMatcher, AnotherCallOrSizeIsAMismatchNamingBothSides) {
  std::function<std::string(const CallDescriptor&)> describe = [](const CallDescriptor& d) {
    return "allreduce #" + std::to_string(d.seq) + " of " + std::to_string(d.count);
  };
  PeerMatcher m(3, &describe);
  Outcomes out(m);
  std::vector<std::byte> into(32);
  NetOp op;
  receive(op, into, MessageKind::kCollective, 4, 0, callOf(4, 8));
  m.post(op, out);
  deliver(m, out, {MessageKind::kCollective, 4, 0}, callOf(4, 9), bytes(32, 0), 0, 32);
  ASSERT_EQ(op.state.load(), NetOp::kFailed);
  EXPECT_EQ(op.code, ErrorCode::kMismatch);
  EXPECT_EQ(op.error, "this rank called allreduce #4 of 8 but peer 3 called allreduce #4 of 9");

  // Kept aside first, then posted with another size: a point-to-point message names its tag.
  deliver(m, out, {MessageKind::kPointToPoint, 11, 0}, {}, bytes(20, 0), 0, 20);
  NetOp p2p;
  receive(p2p, into, MessageKind::kPointToPoint, 11, 0, {});
  m.post(p2p, out);
  ASSERT_EQ(p2p.state.load(), NetOp::kFailed);
  EXPECT_EQ(p2p.error, "peer 3 sent 20 bytes with tag 11 but this rank receives 32 bytes");
  EXPECT_EQ(m.keptBytes(), 0u);
}

TEST(PeerMatcher, TwoReceivesOfOneNameAreRefused) {
  PeerMatcher m(3, nullptr);
  Outcomes out(m);
  std::vector<std::byte> a(8), b(8);
  NetOp first, second;
  receive(first, a, MessageKind::kCollective, 1, 0, callOf(1));
  receive(second, b, MessageKind::kCollective, 1, 0, callOf(1));
  m.post(first, out);
  m.post(second, out);
  EXPECT_EQ(first.state.load(), NetOp::kPending);
  ASSERT_EQ(second.state.load(), NetOp::kFailed);
  EXPECT_EQ(second.code, ErrorCode::kInternal);
  EXPECT_EQ(m.posted(), std::vector<NetOp*>{&first});
}

TEST(PeerMatcher, AnAbandonedPieceLosesItsMessageAndNamesItsReceive) {
  PeerMatcher m(3, nullptr);
  Outcomes out(m);
  const MessageName name{MessageKind::kCollective, 6, 0};
  const Piece piece{name, callOf(6), 40, 0, 40};
  const PeerMatcher::Landing kept = m.arrive(piece, out);
  std::vector<std::byte> into(40);
  NetOp op;
  receive(op, into, MessageKind::kCollective, 6, 0, callOf(6));
  m.post(op, out);
  EXPECT_EQ(m.abandon(kept), &op);
  EXPECT_EQ(m.keptBytes(), 0u);

  NetOp direct;
  std::vector<std::byte> other(40);
  receive(direct, other, MessageKind::kCollective, 6, 1, callOf(6));
  m.post(direct, out);
  const PeerMatcher::Landing straight = m.arrive({{MessageKind::kCollective, 6, 1}, callOf(6), 40, 0, 40}, out);
  EXPECT_EQ(m.abandon(straight), &direct);
}

TEST(PeerMatcher, WhatIsKeptForEndedCallsIsDroppedAndAnotherCallIsNamed) {
  PeerMatcher m(3, nullptr);
  Outcomes out(m);
  deliver(m, out, {MessageKind::kCollective, 1, 0}, callOf(1), bytes(10, 0), 0, 10);
  deliver(m, out, {MessageKind::kCollective, 2, 0}, callOf(2, 5), bytes(20, 0), 0, 20);
  deliver(m, out, {MessageKind::kPointToPoint, 1, 0}, {}, bytes(30, 0), 0, 30);
  EXPECT_EQ(m.keptBytes(), 60u);
  EXPECT_FALSE(m.keptForOtherCall(callOf(2, 5)).has_value());
  const auto theirs = m.keptForOtherCall(callOf(2, 6));
  ASSERT_TRUE(theirs.has_value());
  EXPECT_EQ(theirs->count, 5u);
  m.dropCallsBefore(2);
  EXPECT_EQ(m.keptBytes(), 50u);  // call 2's message and the point-to-point one stay
  m.dropCallsBefore(3);
  EXPECT_EQ(m.keptBytes(), 30u);
}

TEST(PeerMatcher, AFailedReceiveTakesNoMorePieces) {
  PeerMatcher m(3, nullptr);
  Outcomes out(m);
  const MessageName name{MessageKind::kCollective, 8, 0};
  const PeerMatcher::Landing inFlight = m.arrive({name, callOf(8), 24, 0, 24}, out);
  std::vector<std::byte> into(24);
  NetOp op;
  receive(op, into, MessageKind::kCollective, 8, 0, callOf(8));
  m.post(op, out);
  out.failOp(op, ErrorCode::kInternal, "cancelled");
  std::fill_n(inFlight.target, 24, std::byte{0x5a});
  m.landed(inFlight, 24, out);
  EXPECT_EQ(into, std::vector<std::byte>(24));  // untouched
  EXPECT_EQ(m.keptBytes(), 0u);
  EXPECT_EQ(out.completed, 0);
}

}  // namespace
}  // namespace braid::transport
