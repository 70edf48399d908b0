// The TCP transport's wire format. Every byte a rank sends to a peer after the handshake is a frame: a fixed
// 88-byte header, then `length` payload bytes. A message (one send of an algorithm) is cut into frames of at
// most kMaxFramePayload bytes that may travel on different streams of the pair; the receiver puts each frame at
// its `offset` within the message named by (kind, key, step), so streams need not keep order between them.
//
// The receiver decodes and validates a header before it acts on any field or reads any payload: magic, version,
// kind, data type and collective in range, and offset + length <= message bytes computed without overflow. A
// header that breaks a rule means the stream is out of step (or not braid): the connection is dropped.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "transport/call_descriptor.hpp"

namespace braid::tcp {

inline constexpr std::uint32_t kFrameMagic = 0x46525242;  // "BRRF" little-endian
inline constexpr std::uint16_t kFrameVersion = 1;
inline constexpr std::size_t kFrameHeaderBytes = 88;
/// Largest payload of one frame: big enough that the header and the wake-up per frame cost < 0.1%, small enough
/// that the frames of one message spread over the streams of a pair and that a receiver reduces one frame while
/// the next arrives.
inline constexpr std::size_t kMaxFramePayload = std::size_t{512} << 10;
/// Largest notice text.
inline constexpr std::size_t kMaxNoticeBytes = 4096;
/// Largest message a frame may claim to belong to (2^48 bytes): bounds every offset computation.
inline constexpr std::uint64_t kMaxMessageBytes = std::uint64_t{1} << 48;

enum class FrameKind : std::uint16_t {
  kCollective = 1,  // part of a collective's message: key = sequence number, step = message index in the call
  kPointToPoint,    // part of a send/recv message: key = user tag, step = message number for (pair, tag)
  kNotice,          // this peer failed the call `key` (a sequence number); reason = error code, payload = why
  kHeartbeat,       // no payload: the peer is alive; key = its progress (transport::Progress::word)
  kGoodbye,         // the peer destroys its communicator: end of stream is not a failure
};

struct FrameHeader {
  FrameKind kind = FrameKind::kCollective;
  std::int64_t key = 0;
  std::uint32_t step = 0;          // notices: 1 + the peer the failing rank blames, 0 for none
  std::uint32_t reason = 0;        // notices: the braid::ErrorCode the peers should raise
  transport::CallDescriptor call;  // collectives: the call, for the cross-rank check; zero otherwise
  std::uint64_t messageBytes = 0;
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
};

using EncodedHeader = std::array<std::byte, kFrameHeaderBytes>;

EncodedHeader encodeFrame(const FrameHeader& header);
/// Decodes and validates. False with *why set when the header breaks a rule (see the file comment).
bool decodeFrame(std::span<const std::byte, kFrameHeaderBytes> bytes, FrameHeader* header, std::string* why);

}  // namespace braid::tcp
