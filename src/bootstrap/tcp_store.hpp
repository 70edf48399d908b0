// The TCP key-value store: one server (usually in the root rank's process) and one client per rank.
//
// Wire protocol (all integers little-endian). Every message is a frame: a 16-byte header
//   magic "BRST" | version u8 | op u8 | status u8 | reserved u8 (0) | key bytes u32 | value bytes u32
// followed by the key and the value. The server checks the lengths against kMaxKeyBytes/kMaxValueBytes (and
// much tighter limits before authentication) before it reads or allocates a body; a frame that breaks a rule
// closes that connection only.
//
// Handshake: the server sends kHello with a 32-byte random nonce; the client answers kAuth carrying
// HMAC-SHA256(key = token, nonce || "braid-store-v1"); the server compares in constant time and answers
// kAuthResult with status kOk or kAuthFailed (then closes). Requests: kSet(key, value) -> kOk;
// kGet(key, u64 wait ms; ~0 = forever) -> kOk(value) once the key exists, or kTimeout when the wait ends;
// kAdd(key, i64 delta) -> kOk(i64 new value) or kError(message) when the key holds a non-integer.
// Each connection has at most one request in flight: the server reads its next frame only after replying.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "base/deadline.hpp"
#include "bootstrap/store.hpp"
#include "transport/tcp/socket.hpp"

namespace braid::bootstrap {

namespace wire {

inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kHeaderBytes = 16;
inline constexpr std::size_t kMaxKeyBytes = 4 << 10;
inline constexpr std::size_t kMaxValueBytes = std::size_t{64} << 20;
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kProofBytes = 32;  // SHA-256
inline constexpr std::uint64_t kWaitForever = ~std::uint64_t{0};

enum class Op : std::uint8_t { kHello = 1, kAuth = 2, kAuthResult = 3, kSet = 4, kGet = 5, kAdd = 6, kReply = 7 };
enum class Status : std::uint8_t { kOk = 0, kTimeout = 1, kError = 2, kAuthFailed = 3 };

struct Header {
  Op op = Op::kReply;
  Status status = Status::kOk;
  std::uint32_t keyBytes = 0;
  std::uint32_t valueBytes = 0;
};

std::array<std::byte, kHeaderBytes> encodeHeader(const Header& header);
// Checks magic and version only (lengths are the reader's business). False with *why set when they are wrong.
bool decodeHeader(std::span<const std::byte, kHeaderBytes> bytes, Header* header, std::string* why);
// HMAC-SHA256(token, nonce || "braid-store-v1"). An empty token is a valid (empty) HMAC key.
std::array<std::byte, kProofBytes> authProof(const std::string& token, std::span<const std::byte> nonce);

/// Serialises braid's OpenSSL calls with fork(): a process that forks its ranks after starting a store (the usual
/// "make a unique id, then fork" pattern) must not fork while the store thread is inside OpenSSL, whose locks the
/// child would inherit held. Hold the returned guard around every OpenSSL call made from a braid thread.
std::unique_lock<std::mutex> cryptoForkGuard();
/// RAND_bytes under cryptoForkGuard; false when OpenSSL fails.
bool randomBytes(void* out, std::size_t bytes);

}  // namespace wire

/// Serves any number of clients from one thread that sleeps in poll(). Not copyable or movable.
/// start() and stop() are meant for one owning thread; address() may be called from any thread after start().
class TcpStoreServer {
 public:
  TcpStoreServer();
  ~TcpStoreServer();  // stop()
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  /// Binds (port 0 = ephemeral), then starts the server thread. Throws (and starts nothing) if binding fails.
  void start(const tcp::Address& bindAddress, std::string token);
  /// The address clients should dial: the bound host and the real port.
  tcp::Address address() const;
  bool running() const { return thread_.joinable(); }
  /// Wakes the thread, joins it and closes every connection: clients waiting in get see PeerLost. Idempotent.
  /// In a process forked after start() the thread does not exist; there stop() only closes this copy's fds.
  void stop();

 private:
  class Loop;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  tcp::Address address_;
  int wakeFd_ = -1;
  int listenFd_ = -1;  // owned by loop_; kept to close it in a forked child without touching loop_
  int ownerPid_ = -1;
};

/// A store server on an ephemeral port of this host's address on the interface BRAID_IFNAME (`ifname`) picks:
/// for a rendezvous whose address travels another way (PMIx, a surviving communicator).
std::unique_ptr<TcpStoreServer> serveStoreHere(const std::string& ifname, const std::string& token);

/// One connection to a TcpStoreServer. Thread-safe: concurrent calls take turns on the one connection (a get
/// that waits holds the turn, so threads that must not wait behind it should use their own client).
/// After a transport failure or a client-side timeout the connection is out of step and every later call
/// throws PeerLost; create a new client to continue.
class TcpStoreClient : public Store {
 public:
  /// How long set/add (which take no Deadline) wait for the server's reply. 600 s = BRAID_TIMEOUT's default.
  static constexpr double kDefaultOpTimeoutSeconds = 600;

  /// Connects (retrying until connectDeadline while the server is not up yet) and authenticates with `token`.
  /// A wrong token -> InvalidArgument "store at HOST:PORT rejected the job token (BRAID_TOKEN differs?)".
  TcpStoreClient(const tcp::Address& server, std::string token, Deadline connectDeadline,
                 double opTimeoutSeconds = kDefaultOpTimeoutSeconds);

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Deadline deadline) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;

  const tcp::Address& serverAddress() const { return server_; }

 private:
  struct Reply {
    wire::Status status;
    std::string value;
  };
  Reply request(wire::Op op, const std::string& what, const std::string& key, const std::string& value,
                Deadline replyDeadline);
  void handshake(const std::string& token, Deadline deadline);

  tcp::Address server_;
  double opTimeoutSeconds_;
  std::mutex mutex_;  // one request at a time on socket_
  tcp::Socket socket_;
  bool broken_ = false;
};

}  // namespace braid::bootstrap
