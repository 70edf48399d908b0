#include "transport/tcp/frame.hpp"

#include <cstring>

#include "base/error.hpp"

namespace braid::tcp {

namespace {

// Fields are written one by one in little-endian order at fixed offsets: no struct padding or host byte order
// reaches the wire.
class Writer {
 public:
  explicit Writer(std::byte* out) : out_(out) {}
  template <typename T>
  void put(T value) {
    auto u = static_cast<std::make_unsigned_t<T>>(value);
    for (std::size_t i = 0; i < sizeof(T); ++i) out_[pos_++] = static_cast<std::byte>((u >> (8 * i)) & 0xff);
  }
  std::size_t pos() const { return pos_; }

 private:
  std::byte* out_;
  std::size_t pos_ = 0;
};

class Reader {
 public:
  explicit Reader(const std::byte* in) : in_(in) {}
  template <typename T>
  T get() {
    std::make_unsigned_t<T> u = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      u |= static_cast<std::make_unsigned_t<T>>(static_cast<std::uint8_t>(in_[pos_++])) << (8 * i);
    }
    return static_cast<T>(u);
  }

 private:
  const std::byte* in_;
  std::size_t pos_ = 0;
};

// Bounds of the enums a header may carry; checked here so that nothing downstream sees an out-of-range value.
constexpr std::uint32_t kMaxDataType = 64;
constexpr std::uint32_t kMaxCollective = 64;
constexpr std::uint32_t kMaxReduceKind = 64;
constexpr std::uint32_t kMaxErrorCode = static_cast<std::uint32_t>(ErrorCode::kInternal);

}  // namespace

EncodedHeader encodeFrame(const FrameHeader& h) {
  EncodedHeader out{};
  Writer w(out.data());
  w.put(kFrameMagic);
  w.put(kFrameVersion);
  w.put(static_cast<std::uint16_t>(h.kind));
  w.put(h.key);
  w.put(h.step);
  w.put(h.reason);
  w.put(h.call.seq);
  w.put(h.call.collective);
  w.put(h.call.dataType);
  w.put(h.call.count);
  w.put(h.call.root);
  w.put(h.call.reduceKind);
  w.put(h.call.shapeHash);
  w.put(h.messageBytes);
  w.put(h.offset);
  w.put(h.length);
  w.put(std::uint32_t{0});  // reserved
  if (w.pos() != kFrameHeaderBytes) fail(ErrorCode::kInternal, {}, "frame header is ", w.pos(), " bytes");
  return out;
}

bool decodeFrame(std::span<const std::byte, kFrameHeaderBytes> bytes, FrameHeader* h, std::string* why) {
  Reader r(bytes.data());
  const auto magic = r.get<std::uint32_t>();
  if (magic != kFrameMagic) {
    *why = strCat("bad frame magic 0x", std::hex, magic, " (not a braid frame, or the stream is out of step)");
    return false;
  }
  const auto version = r.get<std::uint16_t>();
  if (version != kFrameVersion) {
    *why = strCat("frame version ", version, " (this build speaks ", kFrameVersion, ")");
    return false;
  }
  const auto kind = r.get<std::uint16_t>();
  if (kind < static_cast<std::uint16_t>(FrameKind::kCollective) ||
      kind > static_cast<std::uint16_t>(FrameKind::kGoodbye)) {
    *why = strCat("unknown frame kind ", kind);
    return false;
  }
  h->kind = static_cast<FrameKind>(kind);
  h->key = r.get<std::int64_t>();
  h->step = r.get<std::uint32_t>();
  h->reason = r.get<std::uint32_t>();
  h->call.seq = r.get<std::int64_t>();
  h->call.collective = r.get<std::uint32_t>();
  h->call.dataType = r.get<std::uint32_t>();
  h->call.count = r.get<std::uint64_t>();
  h->call.root = r.get<std::int32_t>();
  h->call.reduceKind = r.get<std::uint32_t>();
  h->call.shapeHash = r.get<std::uint64_t>();
  h->messageBytes = r.get<std::uint64_t>();
  h->offset = r.get<std::uint64_t>();
  h->length = r.get<std::uint32_t>();
  if (h->call.dataType > kMaxDataType || h->call.collective > kMaxCollective || h->call.reduceKind > kMaxReduceKind) {
    *why = strCat("frame names data type ", h->call.dataType, ", collective ", h->call.collective, ", reduce kind ",
                  h->call.reduceKind, ": out of range");
    return false;
  }
  const std::size_t maxPayload = h->kind == FrameKind::kNotice ? kMaxNoticeBytes : kMaxFramePayload;
  if (h->length > maxPayload) {
    *why = strCat("frame payload of ", h->length, " bytes exceeds the limit of ", maxPayload);
    return false;
  }
  // Overflow-safe: offset <= messageBytes <= 2^48, then length <= messageBytes - offset.
  if (h->messageBytes > kMaxMessageBytes || h->offset > h->messageBytes || h->length > h->messageBytes - h->offset) {
    *why = strCat("frame at offset ", h->offset, " with ", h->length, " bytes does not fit its message of ",
                  h->messageBytes, " bytes");
    return false;
  }
  if (h->kind == FrameKind::kNotice && (h->reason < 1 || h->reason > kMaxErrorCode || h->offset != 0)) {
    *why = strCat("notice frame with error code ", h->reason, " at offset ", h->offset);
    return false;
  }
  if ((h->kind == FrameKind::kHeartbeat || h->kind == FrameKind::kGoodbye) && h->length != 0) {
    *why = strCat("control frame carries ", h->length, " payload bytes");
    return false;
  }
  return true;
}

}  // namespace braid::tcp
