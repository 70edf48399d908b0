#include "bootstrap/tcp_store.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>
#include <vector>

#include "base/error.hpp"
#include "base/logging.hpp"

namespace braid::bootstrap {

namespace wire {

namespace {

constexpr char kMagic[4] = {'B', 'R', 'S', 'T'};
constexpr char kAuthContext[] = "braid-store-v1";

void putU32(std::byte* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>(v >> (8 * i));
}

std::uint32_t getU32(const std::byte* at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(at[i]) << (8 * i);
  return v;
}

}  // namespace

std::array<std::byte, kHeaderBytes> encodeHeader(const Header& header) {
  std::array<std::byte, kHeaderBytes> out{};
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::byte>(kMagic[i]);
  out[4] = static_cast<std::byte>(kVersion);
  out[5] = static_cast<std::byte>(header.op);
  out[6] = static_cast<std::byte>(header.status);
  out[7] = std::byte{0};
  putU32(&out[8], header.keyBytes);
  putU32(&out[12], header.valueBytes);
  return out;
}

bool decodeHeader(std::span<const std::byte, kHeaderBytes> bytes, Header* header, std::string* why) {
  if (std::memcmp(bytes.data(), kMagic, 4) != 0) {
    *why = "bad magic (not a braid store frame)";
    return false;
  }
  if (static_cast<std::uint8_t>(bytes[4]) != kVersion) {
    *why = strCat("protocol version ", static_cast<int>(bytes[4]), " (this build speaks ", int{kVersion}, ")");
    return false;
  }
  header->op = static_cast<Op>(bytes[5]);
  header->status = static_cast<Status>(bytes[6]);
  header->keyBytes = getU32(&bytes[8]);
  header->valueBytes = getU32(&bytes[12]);
  return true;
}

std::array<std::byte, kProofBytes> authProof(const std::string& token, std::span<const std::byte> nonce) {
  std::vector<unsigned char> message(nonce.size() + sizeof kAuthContext - 1);
  std::memcpy(message.data(), nonce.data(), nonce.size());
  std::memcpy(message.data() + nonce.size(), kAuthContext, sizeof kAuthContext - 1);
  // OpenSSL wants a non-null key pointer even for an empty key.
  static const unsigned char kNoKey = 0;
  const void* key = token.empty() ? static_cast<const void*>(&kNoKey) : token.data();
  std::array<std::byte, kProofBytes> out{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key, static_cast<int>(token.size()), message.data(), message.size(),
           reinterpret_cast<unsigned char*>(out.data()), &length) == nullptr ||
      length != kProofBytes) {
    fail(ErrorCode::kInternal, {}, "HMAC-SHA256 failed (OpenSSL)");
  }
  return out;
}

}  // namespace wire

namespace {

using Clock = std::chrono::steady_clock;

// An unauthenticated connection gets this long to prove the token; then it is dropped so that port scanners
// and stuck peers do not pile up.
constexpr auto kAuthTimeout = std::chrono::seconds(30);
// After accept() fails for lack of fds, stop polling the listener this long instead of spinning on it.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// At most this much is read from one connection per poll round, so one 64 MiB set cannot starve the others.
constexpr std::size_t kReadBudget = std::size_t{1} << 20;
constexpr std::size_t kReadChunk = std::size_t{256} << 10;
// The server answers a timed-out get when its wait ends; the client allows this much more before it gives up
// on the reply itself (network delay, a busy server).
constexpr double kReplyGraceSeconds = 5;

std::span<const std::byte> bytesOf(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

std::string encodeI64(std::int64_t v) {
  std::string out(8, '\0');
  const auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>(u >> (8 * i));
  return out;
}

std::uint64_t decodeU64(std::string_view s) {
  std::uint64_t u = 0;
  for (int i = 0; i < 8; ++i)
    u |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[static_cast<std::size_t>(i)])) << (8 * i);
  return u;
}

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 64) out += "...";
  return out;
}

}  // namespace

// ---- server ----

// Everything the server thread touches. Only that thread uses it between start() and stop().
class TcpStoreServer::Loop {
 public:
  Loop(tcp::Socket listener, std::string token, int wakeFd, std::string name)
      : listener_(std::move(listener)), token_(std::move(token)), wakeFd_(wakeFd), name_(std::move(name)) {}

  void run() noexcept {
    try {
      serve();
    } catch (const std::exception& e) {
      // Clients then see their connections close (PeerLost) rather than hang.
      logLine(LogLevel::kError, -1, strCat("store ", name_, ": server thread stopped: ", e.what()));
    }
    conns_.clear();
    listener_.close();
  }

 private:
  struct Conn {
    std::uint64_t id = 0;
    tcp::Socket socket;
    bool authed = false;
    bool closeAfterFlush = false;  // after an auth failure: deliver the verdict, then hang up
    bool dead = false;
    std::array<std::byte, wire::kNonceBytes> nonce{};
    Clock::time_point authDeadline;
    // The frame being read. Only one frame is read at a time, and none while a reply is pending or a get is
    // parked, so `in` never holds more than one (validated) frame.
    std::vector<std::byte> in;
    bool haveHeader = false;
    wire::Header header;
    std::vector<std::byte> out;
    std::size_t outDone = 0;
    bool parked = false;
    std::string parkedKey;
    Clock::time_point parkDeadline = Clock::time_point::max();
  };

  void note(LogLevel level, const std::string& message) {
    if (logEnabled(level)) logLine(level, -1, strCat("store ", name_, ": ", message));
  }

  void serve() {
    std::vector<pollfd> fds;
    std::vector<std::uint64_t> ids;
    for (;;) {
      fds.clear();
      ids.clear();
      fds.push_back({wakeFd_, POLLIN, 0});
      const bool listening = Clock::now() >= acceptPausedUntil_;
      if (listening) fds.push_back({listener_.fd(), POLLIN, 0});
      const std::size_t firstConn = fds.size();
      for (const auto& [id, c] : conns_) {
        short events = POLLRDHUP;
        if (wantBytes(*c) > 0) events |= POLLIN;
        if (c->outDone < c->out.size()) events |= POLLOUT;
        fds.push_back({c->socket.fd(), events, 0});
        ids.push_back(id);
      }
      const int rc = ::poll(fds.data(), fds.size(), pollTimeoutMs());
      if (rc < 0) {
        if (errno == EINTR) continue;
        failErrno("poll", errno);
      }
      if (fds[0].revents != 0) return;  // stop()
      if (listening && fds[1].revents != 0) acceptNew();
      for (std::size_t i = firstConn; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto it = conns_.find(ids[i - firstConn]);
        if (it == conns_.end() || it->second->dead) continue;
        handleEvents(*it->second, fds[i].revents);
      }
      expireTimers();
      std::erase_if(conns_, [](const auto& entry) { return entry.second->dead; });
    }
  }

  int pollTimeoutMs() const {
    auto next = Clock::time_point::max();
    if (acceptPausedUntil_ > Clock::now()) next = acceptPausedUntil_;
    for (const auto& [id, c] : conns_) {
      if (!c->authed) next = std::min(next, c->authDeadline);
      if (c->parked) next = std::min(next, c->parkDeadline);
    }
    if (next == Clock::time_point::max()) return -1;  // nothing timed: sleep until I/O or stop()
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
    return static_cast<int>(std::clamp<std::int64_t>(ms, 0, INT_MAX));
  }

  void acceptNew() {
    // A bounded batch per round keeps a connection storm from starving established clients.
    for (int i = 0; i < 64; ++i) {
      tcp::Socket s;
      try {
        s = listener_.tryAccept();
      } catch (const std::exception& e) {
        note(LogLevel::kWarn, strCat("accept failed, pausing new connections briefly: ", e.what()));
        acceptPausedUntil_ = Clock::now() + kAcceptPause;
        return;
      }
      if (!s.valid()) return;
      auto c = std::make_unique<Conn>();
      c->socket = std::move(s);
      c->authDeadline = Clock::now() + kAuthTimeout;
      if (RAND_bytes(reinterpret_cast<unsigned char*>(c->nonce.data()), static_cast<int>(c->nonce.size())) != 1) {
        note(LogLevel::kError, "RAND_bytes failed; refusing connection from " + c->socket.peer());
        continue;
      }
      note(LogLevel::kDebug, "connection from " + c->socket.peer());
      c->id = nextId_++;
      Conn& conn = *c;
      conns_.emplace(conn.id, std::move(c));
      queueFrame(conn, wire::Op::kHello, wire::Status::kOk,
                 std::string_view(reinterpret_cast<const char*>(conn.nonce.data()), conn.nonce.size()));
    }
  }

  // How many more bytes to read for the current frame; 0 while the connection must not be read.
  static std::size_t wantBytes(const Conn& c) {
    if (c.dead || c.closeAfterFlush || c.parked || c.outDone < c.out.size()) return 0;
    if (!c.haveHeader) return wire::kHeaderBytes - c.in.size();
    return wire::kHeaderBytes + c.header.keyBytes + c.header.valueBytes - c.in.size();
  }

  void handleEvents(Conn& c, short revents) {
    try {
      if ((revents & POLLOUT) != 0) flush(c);
      if (c.dead) return;
      if ((revents & POLLIN) != 0 && wantBytes(c) > 0) {
        readFrames(c);
      } else if ((revents & (POLLHUP | POLLERR | POLLRDHUP)) != 0) {
        // Not reading (a parked get, or a reply in flight): the client hung up or gave up waiting.
        closeConn(c, LogLevel::kDebug, "peer hung up");
      }
    } catch (const Error& e) {
      closeConn(c, e.code() == ErrorCode::kPeerLost ? LogLevel::kDebug : LogLevel::kWarn, e.message());
    } catch (const std::exception& e) {
      closeConn(c, LogLevel::kWarn, e.what());  // e.g. bad_alloc for a large value: drop this client only
    }
  }

  void readFrames(Conn& c) {
    std::size_t budget = kReadBudget;
    while (budget > 0 && !c.dead) {
      const std::size_t want = std::min({wantBytes(c), kReadChunk, budget});
      if (want == 0) return;
      const std::size_t old = c.in.size();
      c.in.resize(old + want);
      const std::size_t n = c.socket.recvSome(std::span(c.in).subspan(old));
      c.in.resize(old + n);
      if (n == 0) return;
      budget -= n;
      if (!c.haveHeader && c.in.size() == wire::kHeaderBytes) {
        std::string why;
        if (!wire::decodeHeader(std::span<const std::byte, wire::kHeaderBytes>(c.in.data(), wire::kHeaderBytes),
                                &c.header, &why) ||
            !validate(c, &why)) {
          closeConn(c, LogLevel::kWarn, "malformed frame: " + why);
          return;
        }
        c.haveHeader = true;
      }
      if (c.haveHeader && wantBytes(c) == 0) handleFrame(c);
    }
  }

  // Lengths are checked here, before any body byte is read or allocated.
  bool validate(const Conn& c, std::string* why) const {
    const wire::Header& h = c.header;
    if (h.status != wire::Status::kOk) {
      *why = strCat("request with status ", static_cast<int>(h.status));
      return false;
    }
    if (!c.authed) {
      if (h.op != wire::Op::kAuth || h.keyBytes != 0 || h.valueBytes != wire::kProofBytes) {
        *why = strCat("expected an authentication frame, got op ", static_cast<int>(h.op), " key ", h.keyBytes,
                      " value ", h.valueBytes, " bytes");
        return false;
      }
      return true;
    }
    if (h.keyBytes == 0 || h.keyBytes > wire::kMaxKeyBytes) {
      *why = strCat("key of ", h.keyBytes, " bytes (limit 1..", wire::kMaxKeyBytes, ")");
      return false;
    }
    switch (h.op) {
      case wire::Op::kSet:
        if (h.valueBytes > wire::kMaxValueBytes) {
          *why = strCat("value of ", h.valueBytes, " bytes (limit ", wire::kMaxValueBytes, ")");
          return false;
        }
        return true;
      case wire::Op::kGet:
      case wire::Op::kAdd:
        if (h.valueBytes != 8) {
          *why = strCat("op ", static_cast<int>(h.op), " with a ", h.valueBytes, "-byte argument (expected 8)");
          return false;
        }
        return true;
      default:
        *why = strCat("unknown op ", static_cast<int>(h.op));
        return false;
    }
  }

  void handleFrame(Conn& c) {
    const wire::Header h = c.header;
    const char* body = reinterpret_cast<const char*>(c.in.data()) + wire::kHeaderBytes;
    std::string key(body, h.keyBytes);
    std::string value(body + h.keyBytes, h.valueBytes);
    c.haveHeader = false;
    c.in.clear();
    if (c.in.capacity() > kReadChunk) c.in.shrink_to_fit();  // do not keep a 64 MiB buffer per client

    if (!c.authed) {
      const auto expected = wire::authProof(token_, c.nonce);
      if (CRYPTO_memcmp(expected.data(), value.data(), expected.size()) != 0) {
        note(LogLevel::kWarn, strCat("rejected ", c.socket.peer(), ": wrong job token"));
        c.closeAfterFlush = true;
        queueFrame(c, wire::Op::kAuthResult, wire::Status::kAuthFailed, {});
        return;
      }
      c.authed = true;
      queueFrame(c, wire::Op::kAuthResult, wire::Status::kOk, {});
      return;
    }
    switch (h.op) {
      case wire::Op::kSet:
        data_[key] = std::move(value);
        queueFrame(c, wire::Op::kReply, wire::Status::kOk, {});
        wake(key);
        return;
      case wire::Op::kGet: {
        const auto it = data_.find(key);
        if (it != data_.end()) {
          queueFrame(c, wire::Op::kReply, wire::Status::kOk, it->second);
          return;
        }
        const std::uint64_t waitMs = decodeU64(value);
        if (waitMs == 0) {
          queueFrame(c, wire::Op::kReply, wire::Status::kTimeout, {});
          return;
        }
        c.parked = true;
        // Waits beyond ~30 years are "forever"; this also keeps the time_point arithmetic from overflowing.
        c.parkDeadline = waitMs >= (std::uint64_t{1} << 40) ? Clock::time_point::max()
                                                            : Clock::now() + std::chrono::milliseconds(waitMs);
        c.parkedKey = key;
        waiters_[key].push_back(c.id);
        return;
      }
      case wire::Op::kAdd: {
        const auto delta = static_cast<std::int64_t>(decodeU64(value));
        std::int64_t current = 0;
        auto it = data_.find(key);
        if (it != data_.end()) {
          const std::string& text = it->second;
          const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), current);
          if (ec != std::errc() || end != text.data() + text.size()) {
            queueFrame(
                c, wire::Op::kReply, wire::Status::kError,
                strCat("add('", printable(key), "'): the key holds '", printable(text), "', which is not an integer"));
            return;
          }
        }
        std::int64_t updated = 0;
        if (__builtin_add_overflow(current, delta, &updated)) {
          queueFrame(c, wire::Op::kReply, wire::Status::kError,
                     strCat("add('", printable(key), "'): ", current, " + ", delta, " overflows int64"));
          return;
        }
        data_[key] = std::to_string(updated);
        queueFrame(c, wire::Op::kReply, wire::Status::kOk, encodeI64(updated));
        wake(key);
        return;
      }
      default:
        closeConn(c, LogLevel::kWarn, "unexpected op");  // validate() let it through: a bug, but not a crash
        return;
    }
  }

  // Answers every get parked on `key`.
  void wake(const std::string& key) {
    auto node = waiters_.extract(key);
    if (node.empty()) return;
    const std::string& value = data_.at(key);
    for (const std::uint64_t id : node.mapped()) {
      auto it = conns_.find(id);
      if (it == conns_.end()) continue;
      Conn& w = *it->second;
      if (w.dead || !w.parked || w.parkedKey != key) continue;
      w.parked = false;
      w.parkedKey.clear();
      queueFrame(w, wire::Op::kReply, wire::Status::kOk, value);
    }
  }

  void unpark(Conn& c) {
    if (!c.parked) return;
    auto it = waiters_.find(c.parkedKey);
    if (it != waiters_.end()) {
      std::erase(it->second, c.id);
      if (it->second.empty()) waiters_.erase(it);
    }
    c.parked = false;
    c.parkedKey.clear();
  }

  void expireTimers() {
    const auto now = Clock::now();
    for (auto& [id, p] : conns_) {
      Conn& c = *p;
      if (c.dead) continue;
      if (!c.authed && now >= c.authDeadline) {
        closeConn(c, LogLevel::kWarn, "did not authenticate in time");
      } else if (c.parked && now >= c.parkDeadline) {
        unpark(c);
        queueFrame(c, wire::Op::kReply, wire::Status::kTimeout, {});
      }
    }
  }

  // Appends a frame to the connection's output and sends what the socket takes now; POLLOUT sends the rest.
  void queueFrame(Conn& c, wire::Op op, wire::Status status, std::string_view value) {
    if (c.dead) return;
    wire::Header h;
    h.op = op;
    h.status = status;
    h.valueBytes = static_cast<std::uint32_t>(value.size());
    const auto header = wire::encodeHeader(h);
    c.out.insert(c.out.end(), header.begin(), header.end());
    const auto bytes = bytesOf(value);
    c.out.insert(c.out.end(), bytes.begin(), bytes.end());
    try {
      flush(c);
    } catch (const Error& e) {
      closeConn(c, e.code() == ErrorCode::kPeerLost ? LogLevel::kDebug : LogLevel::kWarn, e.message());
    }
  }

  void flush(Conn& c) {
    while (c.outDone < c.out.size()) {
      const std::size_t n = c.socket.sendSome(std::span(c.out).subspan(c.outDone));
      if (n == 0) return;
      c.outDone += n;
    }
    c.out.clear();
    c.outDone = 0;
    if (c.out.capacity() > kReadChunk) c.out.shrink_to_fit();
    if (c.closeAfterFlush) closeConn(c, LogLevel::kDebug, "closed after failed authentication");
  }

  // Marks the connection dead (erased after this poll round, so references held up the stack stay valid).
  void closeConn(Conn& c, LogLevel level, const std::string& reason) {
    if (c.dead) return;
    note(level, strCat("closing connection from ", c.socket.peer(), ": ", reason));
    unpark(c);
    c.dead = true;
    c.socket.close();
  }

  tcp::Socket listener_;
  const std::string token_;
  const int wakeFd_;
  const std::string name_;
  std::map<std::uint64_t, std::unique_ptr<Conn>> conns_;
  std::uint64_t nextId_ = 1;
  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::vector<std::uint64_t>> waiters_;
  Clock::time_point acceptPausedUntil_;
};

TcpStoreServer::TcpStoreServer() = default;

TcpStoreServer::~TcpStoreServer() { stop(); }

void TcpStoreServer::start(const tcp::Address& bindAddress, std::string token) {
  if (running()) fail(ErrorCode::kInvalidArgument, {}, "store server already started at ", address_.toString());
  tcp::Socket listener = tcp::listenOn(bindAddress, SOMAXCONN);
  tcp::Address bound = listener.localAddress();
  // A wildcard bind accepts on every interface, but peers need one address they can dial.
  if (bound.host == "0.0.0.0" || bound.host == "::") bound.host = tcp::hostAddressForPeers();
  const int wakeFd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeFd < 0) failErrno("eventfd", errno);
  listenFd_ = listener.fd();
  loop_ = std::make_unique<Loop>(std::move(listener), std::move(token), wakeFd, bound.toString());
  address_ = bound;
  wakeFd_ = wakeFd;
  ownerPid_ = ::getpid();
  Loop* loop = loop_.get();
  try {
    thread_ = std::thread([loop] { loop->run(); });
  } catch (const std::system_error& e) {
    loop_.reset();
    ::close(wakeFd_);
    wakeFd_ = -1;
    fail(ErrorCode::kInternal, {}, "cannot start the store server thread: ", e.what());
  }
}

tcp::Address TcpStoreServer::address() const { return address_; }

void TcpStoreServer::stop() {
  if (!thread_.joinable()) return;
  if (::getpid() != ownerPid_) {
    // A forked child has a copy of this object but not the thread, and the loop's memory may have been copied
    // mid-update: joining, detaching or destroying any of it is unsafe. Keep the handle and the loop reachable
    // (never destroyed) and only close this process's copies of the listening and wake fds.
    static auto* orphans = new std::vector<std::pair<std::thread, std::unique_ptr<Loop>>>();
    orphans->emplace_back(std::move(thread_), std::move(loop_));
    ::close(listenFd_);
    ::close(wakeFd_);
    wakeFd_ = -1;
    return;
  }
  const std::uint64_t one = 1;
  // eventfd writes of 8 bytes cannot be partial; the only failure (counter overflow) cannot happen with one write.
  [[maybe_unused]] const ssize_t n = ::write(wakeFd_, &one, sizeof one);
  thread_.join();
  loop_.reset();
  ::close(wakeFd_);
  wakeFd_ = -1;
}

// ---- client ----

namespace {

void readFrame(tcp::Socket& socket, Deadline deadline, const std::string& server, wire::Header* header,
               std::string* value, std::size_t maxValue) {
  std::array<std::byte, wire::kHeaderBytes> raw{};
  socket.recvAll(raw, deadline);
  std::string why;
  if (!wire::decodeHeader(raw, header, &why)) {
    fail(ErrorCode::kInvalidArgument, {}, server, " is not a braid store or speaks another version: ", why);
  }
  if (header->keyBytes != 0 || header->valueBytes > maxValue) {
    fail(ErrorCode::kInternal, {}, "store at ", server, " sent a malformed reply (key ", header->keyBytes,
         " bytes, value ", header->valueBytes, " bytes)");
  }
  value->resize(header->valueBytes);
  socket.recvAll(std::as_writable_bytes(std::span(value->data(), value->size())), deadline);
}

void writeFrame(tcp::Socket& socket, Deadline deadline, wire::Op op, const std::string& key, const std::string& value) {
  wire::Header h;
  h.op = op;
  h.keyBytes = static_cast<std::uint32_t>(key.size());
  h.valueBytes = static_cast<std::uint32_t>(value.size());
  const auto header = wire::encodeHeader(h);
  // One send for small frames (TCP_NODELAY is on: separate sends would be separate packets).
  std::vector<std::byte> head(header.begin(), header.end());
  const auto keyBytes = bytesOf(key);
  head.insert(head.end(), keyBytes.begin(), keyBytes.end());
  const bool inlineValue = value.size() <= (64 << 10);
  if (inlineValue) {
    const auto valueBytes = bytesOf(value);
    head.insert(head.end(), valueBytes.begin(), valueBytes.end());
  }
  socket.sendAll(head, deadline);
  if (!inlineValue) socket.sendAll(bytesOf(value), deadline);
}

void checkKey(const std::string& op, const std::string& key) {
  if (key.empty() || key.size() > wire::kMaxKeyBytes) {
    fail(ErrorCode::kInvalidArgument, {}, "store ", op, ": key of ", key.size(), " bytes (limit 1..",
         wire::kMaxKeyBytes, ")");
  }
}

}  // namespace

TcpStoreClient::TcpStoreClient(const tcp::Address& server, std::string token, Deadline connectDeadline,
                               double opTimeoutSeconds)
    : server_(server), opTimeoutSeconds_(opTimeoutSeconds) {
  socket_ = tcp::connectTo(server_, connectDeadline);
  handshake(token, connectDeadline);
}

void TcpStoreClient::handshake(const std::string& token, Deadline deadline) {
  const std::string name = server_.toString();
  wire::Header h;
  std::string payload;
  try {
    readFrame(socket_, deadline, name, &h, &payload, wire::kNonceBytes);
    if (h.op != wire::Op::kHello || payload.size() != wire::kNonceBytes) {
      fail(ErrorCode::kInvalidArgument, {}, name, " is not a braid store (unexpected greeting)");
    }
    const auto proof = wire::authProof(token, bytesOf(payload));
    writeFrame(socket_, deadline, wire::Op::kAuth, "",
               std::string(reinterpret_cast<const char*>(proof.data()), proof.size()));
    readFrame(socket_, deadline, name, &h, &payload, 0);
  } catch (const Error& e) {
    socket_.close();
    if (e.code() == ErrorCode::kTimeout) {
      fail(ErrorCode::kTimeout, {}, "store at ", name, " accepted the connection but did not finish the handshake ",
           "before the deadline: ", e.message());
    }
    if (e.code() == ErrorCode::kPeerLost) {
      fail(ErrorCode::kPeerLost, {}, "store at ", name, " closed the connection during the handshake: ", e.message());
    }
    throw;
  }
  if (h.op != wire::Op::kAuthResult || h.status != wire::Status::kOk) {
    socket_.close();
    if (h.op == wire::Op::kAuthResult && h.status == wire::Status::kAuthFailed) {
      fail(ErrorCode::kInvalidArgument, {}, "store at ", name, " rejected the job token (BRAID_TOKEN differs?)");
    }
    fail(ErrorCode::kInvalidArgument, {}, name, " is not a braid store (unexpected handshake reply)");
  }
}

TcpStoreClient::Reply TcpStoreClient::request(wire::Op op, const std::string& what, const std::string& key,
                                              const std::string& value, Deadline replyDeadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_ || !socket_.valid()) {
    fail(ErrorCode::kPeerLost, {}, what, ": the connection to the store at ", server_.toString(),
         " is unusable after an earlier error");
  }
  try {
    writeFrame(socket_, replyDeadline, op, key, value);
    wire::Header h;
    Reply reply;
    readFrame(socket_, replyDeadline, server_.toString(), &h, &reply.value, wire::kMaxValueBytes);
    if (h.op != wire::Op::kReply) {
      fail(ErrorCode::kInternal, {}, "store sent op ", static_cast<int>(h.op), " where a reply belongs");
    }
    reply.status = h.status;
    return reply;
  } catch (const Error& e) {
    // Whatever was half sent or half received leaves the stream out of step.
    broken_ = true;
    socket_.close();
    fail(e.code(), e.context(), what, " at the store at ", server_.toString(), ": ", e.message());
  }
}

void TcpStoreClient::set(const std::string& key, const std::string& value) {
  checkKey("set", key);
  if (value.size() > wire::kMaxValueBytes) {
    fail(ErrorCode::kInvalidArgument, {}, "store set('", printable(key), "'): value of ", value.size(),
         " bytes (limit ", wire::kMaxValueBytes, ")");
  }
  const Reply r =
      request(wire::Op::kSet, strCat("set('", printable(key), "')"), key, value, Deadline::after(opTimeoutSeconds_));
  if (r.status != wire::Status::kOk) {
    fail(ErrorCode::kInternal, {}, "store set('", printable(key), "'): unexpected status ", static_cast<int>(r.status),
         ": ", r.value);
  }
}

std::string TcpStoreClient::get(const std::string& key, Deadline deadline) {
  checkKey("get", key);
  const double seconds = deadline.secondsLeft();
  const std::uint64_t waitMs =
      deadline.infinite() ? wire::kWaitForever : static_cast<std::uint64_t>(std::ceil(seconds * 1000.0));
  const Deadline replyDeadline =
      deadline.infinite() ? Deadline::never() : Deadline::after(seconds + kReplyGraceSeconds);
  Reply r = request(wire::Op::kGet, strCat("get('", printable(key), "')"), key,
                    encodeI64(static_cast<std::int64_t>(waitMs)), replyDeadline);
  if (r.status == wire::Status::kTimeout) {
    fail(ErrorCode::kTimeout, {}, "store get('", printable(key), "') at ", server_.toString(), " timed out after ",
         seconds, " s: no process set the key");
  }
  if (r.status != wire::Status::kOk) {
    fail(ErrorCode::kInternal, {}, "store get('", printable(key), "'): unexpected status ", static_cast<int>(r.status),
         ": ", r.value);
  }
  return std::move(r.value);
}

std::int64_t TcpStoreClient::add(const std::string& key, std::int64_t delta) {
  checkKey("add", key);
  const Reply r = request(wire::Op::kAdd, strCat("add('", printable(key), "')"), key, encodeI64(delta),
                          Deadline::after(opTimeoutSeconds_));
  if (r.status == wire::Status::kError) fail(ErrorCode::kInvalidArgument, {}, "store ", r.value);
  if (r.status != wire::Status::kOk || r.value.size() != 8) {
    fail(ErrorCode::kInternal, {}, "store add('", printable(key), "'): unexpected reply (status ",
         static_cast<int>(r.status), ", ", r.value.size(), " bytes)");
  }
  return static_cast<std::int64_t>(decodeU64(r.value));
}

}  // namespace braid::bootstrap
