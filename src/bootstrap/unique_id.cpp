#include "bootstrap/unique_id.hpp"

#include <openssl/rand.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "base/error.hpp"
#include "bootstrap/tcp_store.hpp"

namespace braid::bootstrap {

namespace {

constexpr std::uint8_t kMagic[4] = {'B', 'R', 'I', 'D'};
constexpr std::uint8_t kIdVersion = 1;
constexpr std::size_t kFixedBytes = 9;  // magic 4, version 1, host length 1, port 2, token length 1

// Root servers started by createUniqueId in this process, keyed by the id's bytes. Function-local static: it
// is destroyed at exit (stopping the servers) before OpenSSL's own atexit cleanup, because createUniqueId
// initialises OpenSSL (randomToken) before it first touches the registry.
struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<TcpStoreServer>> servers;
};

Registry& registry() {
  static Registry r;
  return r;
}

std::string keyOf(const UniqueIdBytes& id) { return std::string(id.bytes.begin(), id.bytes.end()); }

bool printableText(const std::uint8_t* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] <= 0x20 || p[i] >= 0x7f) return false;
  }
  return true;
}

}  // namespace

std::string randomToken() {
  std::uint8_t raw[16];
  if (!wire::randomBytes(raw, sizeof raw)) fail(ErrorCode::kInternal, {}, "RAND_bytes failed (OpenSSL)");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const std::uint8_t b : raw) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

UniqueIdBytes encodeUniqueId(const tcp::Address& root, const std::string& token) {
  if (root.host.empty() || root.host.size() > 255 || token.size() > 255 ||
      kFixedBytes + root.host.size() + token.size() > sizeof(UniqueIdBytes::bytes)) {
    fail(ErrorCode::kInvalidArgument, {}, "unique id: host '", root.host, "' (", root.host.size(),
         " bytes) and token (", token.size(), " bytes) do not fit in ", sizeof(UniqueIdBytes::bytes) - kFixedBytes,
         " bytes");
  }
  if (!printableText(reinterpret_cast<const std::uint8_t*>(root.host.data()), root.host.size()) ||
      !printableText(reinterpret_cast<const std::uint8_t*>(token.data()), token.size())) {
    fail(ErrorCode::kInvalidArgument, {}, "unique id: host and token must be printable ASCII without spaces");
  }
  UniqueIdBytes id{};
  std::uint8_t* p = id.bytes.data();
  std::memcpy(p, kMagic, 4);
  p[4] = kIdVersion;
  p[5] = static_cast<std::uint8_t>(root.host.size());
  p[6] = static_cast<std::uint8_t>(root.port >> 8);
  p[7] = static_cast<std::uint8_t>(root.port & 0xff);
  p[8] = static_cast<std::uint8_t>(token.size());
  std::memcpy(p + kFixedBytes, root.host.data(), root.host.size());
  std::memcpy(p + kFixedBytes + root.host.size(), token.data(), token.size());
  return id;
}

DecodedId decodeUniqueId(const UniqueIdBytes& id) {
  const std::uint8_t* p = id.bytes.data();
  auto garbage = [](const char* why) -> DecodedId {
    fail(ErrorCode::kInvalidArgument, {}, "not a braid unique id (", why,
         "); pass every rank the bytes createUniqueId returned on the root");
  };
  if (std::memcmp(p, kMagic, 4) != 0) return garbage("bad magic");
  if (p[4] != kIdVersion) return garbage("unknown version");
  const std::size_t hostBytes = p[5];
  const std::size_t tokenBytes = p[8];
  const std::size_t used = kFixedBytes + hostBytes + tokenBytes;
  if (hostBytes == 0 || used > id.bytes.size()) return garbage("bad lengths");
  for (std::size_t i = used; i < id.bytes.size(); ++i) {
    if (p[i] != 0) return garbage("non-zero padding");
  }
  if (!printableText(p + kFixedBytes, hostBytes + tokenBytes)) return garbage("unprintable host or token");
  DecodedId out;
  out.root.host.assign(reinterpret_cast<const char*>(p + kFixedBytes), hostBytes);
  out.root.port = static_cast<std::uint16_t>((p[6] << 8) | p[7]);
  if (out.root.port == 0) return garbage("port 0");
  out.token.assign(reinterpret_cast<const char*>(p + kFixedBytes + hostBytes), tokenBytes);
  return out;
}

UniqueIdBytes createUniqueId() {
  std::string token = randomToken();  // first: see Registry on why OpenSSL must be initialised before it
  auto server = std::make_unique<TcpStoreServer>();
  tcp::Address bind;
  bind.host = tcp::hostAddressForPeers();
  bind.port = 0;
  server->start(bind, token);
  const UniqueIdBytes id = encodeUniqueId(server->address(), token);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.servers[keyOf(id)] = std::move(server);
  return id;
}

void releaseRootServer(const UniqueIdBytes& id) {
  std::unique_ptr<TcpStoreServer> server;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.servers.find(keyOf(id));
    if (it == r.servers.end()) return;
    server = std::move(it->second);
    r.servers.erase(it);
  }
  server.reset();  // joins the server thread outside the registry lock
}

}  // namespace braid::bootstrap
