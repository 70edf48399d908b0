// The TCP transport's frame header: what it encodes, and every rule the decoder enforces before a field is used.
#include <gtest/gtest.h>

#include "transport/tcp/frame.hpp"

namespace braid::tcp {
namespace {

FrameHeader sample() {
  FrameHeader h;
  h.kind = FrameKind::kCollective;
  h.key = 42;
  h.step = 7;
  h.call.seq = 42;
  h.call.collective = 2;
  h.call.dataType = 3;
  h.call.count = 1000;
  h.call.root = -1;
  h.call.reduceKind = 1;
  h.call.shapeHash = 0xfeedface;
  h.messageBytes = 4000;
  h.offset = 1000;
  h.length = 3000;
  return h;
}

bool decodes(const EncodedHeader& bytes, FrameHeader* out, std::string* why) {
  return decodeFrame(std::span<const std::byte, kFrameHeaderBytes>(bytes), out, why);
}

TEST(TcpFrame, RoundTripsEveryField) {
  const FrameHeader h = sample();
  FrameHeader back;
  std::string why;
  ASSERT_TRUE(decodes(encodeFrame(h), &back, &why)) << why;
  EXPECT_EQ(back.kind, h.kind);
  EXPECT_EQ(back.key, h.key);
  EXPECT_EQ(back.step, h.step);
  EXPECT_EQ(back.call, h.call);
  EXPECT_EQ(back.messageBytes, h.messageBytes);
  EXPECT_EQ(back.offset, h.offset);
  EXPECT_EQ(back.length, h.length);
}

TEST(TcpFrame, IsLittleEndianOnTheWire) {
  const EncodedHeader bytes = encodeFrame(sample());
  EXPECT_EQ(static_cast<int>(bytes[0]), 'B');
  EXPECT_EQ(static_cast<int>(bytes[1]), 'R');
  EXPECT_EQ(static_cast<int>(bytes[8]), 42);  // key, low byte first
}

// Each case corrupts one thing; the decoder must refuse it and say what.
TEST(TcpFrame, RefusesWhatBreaksARule) {
  struct Case {
    const char* what;
    std::function<void(FrameHeader&)> change;
    std::function<void(EncodedHeader&)> corrupt;
    const char* mention;
  };
  const std::vector<Case> cases = {
      {"magic", {}, [](EncodedHeader& b) { b[0] = std::byte{'X'}; }, "magic"},
      {"version", {}, [](EncodedHeader& b) { b[4] = std::byte{9}; }, "version"},
      {"kind", {}, [](EncodedHeader& b) { b[6] = std::byte{77}; }, "kind"},
      {"payload over the limit",
       [](FrameHeader& h) {
         h.messageBytes = kMaxFramePayload * 4;
         h.offset = 0;
         h.length = static_cast<std::uint32_t>(kMaxFramePayload + 1);
       },
       {},
       "exceeds"},
      {"offset past the message", [](FrameHeader& h) { h.offset = h.messageBytes + 1; }, {}, "does not fit"},
      {"offset + length wrapping",
       [](FrameHeader& h) {
         h.messageBytes = kMaxMessageBytes;
         h.offset = kMaxMessageBytes - 1;
         h.length = 16;
       },
       {},
       "does not fit"},
      {"message too large", [](FrameHeader& h) { h.messageBytes = kMaxMessageBytes + 1; }, {}, "does not fit"},
      {"data type out of range", [](FrameHeader& h) { h.call.dataType = 1000; }, {}, "out of range"},
      {"notice with no error code",
       [](FrameHeader& h) {
         h.kind = FrameKind::kNotice;
         h.offset = 0;
         h.length = 10;
         h.messageBytes = 10;
         h.reason = 0;
       },
       {},
       "notice"},
      {"heartbeat with a payload",
       [](FrameHeader& h) {
         h.kind = FrameKind::kHeartbeat;
         h.offset = 0;
       },
       {},
       "control frame"},
  };
  for (const Case& c : cases) {
    FrameHeader h = sample();
    if (c.change) c.change(h);
    EncodedHeader bytes = encodeFrame(h);
    if (c.corrupt) c.corrupt(bytes);
    FrameHeader out;
    std::string why;
    EXPECT_FALSE(decodes(bytes, &out, &why)) << c.what;
    EXPECT_NE(why.find(c.mention), std::string::npos) << c.what << ": " << why;
  }
}

}  // namespace
}  // namespace braid::tcp
