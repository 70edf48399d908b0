// The fixed-size headers braid reads off the wire before anything else: the TCP transport's frame header and the
// TCP store's request header. Properties: decoding never crashes; a header that decodes re-encodes to bytes that
// decode to the same header (nothing the decoder accepts is lost or invented on the way back).
#include <algorithm>
#include <array>
#include <cstring>

#include "bootstrap/tcp_store.hpp"
#include "fuzz/fuzz_support.hpp"
#include "transport/tcp/frame.hpp"

namespace {

template <std::size_t N>
std::array<std::byte, N> firstBytes(const std::uint8_t* data, std::size_t size) {
  std::array<std::byte, N> out{};
  std::memcpy(out.data(), data, std::min(size, N));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace braid;
  {
    const auto raw = firstBytes<tcp::kFrameHeaderBytes>(data, size);
    tcp::FrameHeader header;
    std::string why;
    if (tcp::decodeFrame(raw, &header, &why)) {
      const tcp::EncodedHeader once = tcp::encodeFrame(header);
      tcp::FrameHeader again;
      if (!tcp::decodeFrame(once, &again, &why)) fuzz::broken("a decoded frame header does not decode once re-encoded");
      if (tcp::encodeFrame(again) != once) fuzz::broken("a frame header changes on a second round trip");
    } else if (why.empty()) {
      fuzz::broken("a frame header was refused without a reason");
    }
  }
  {
    const auto raw = firstBytes<bootstrap::wire::kHeaderBytes>(data, size);
    bootstrap::wire::Header header;
    std::string why;
    if (bootstrap::wire::decodeHeader(raw, &header, &why)) {
      const auto once = bootstrap::wire::encodeHeader(header);
      bootstrap::wire::Header again;
      if (!bootstrap::wire::decodeHeader(once, &again, &why)) fuzz::broken("a store header does not decode re-encoded");
      if (again.op != header.op || again.status != header.status || again.keyBytes != header.keyBytes ||
          again.valueBytes != header.valueBytes) {
        fuzz::broken("a store header changes on a round trip");
      }
    } else if (why.empty()) {
      fuzz::broken("a store header was refused without a reason");
    }
  }
  return 0;
}
