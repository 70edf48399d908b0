// The TCP store's server: TcpStoreServer (start/stop of its thread) and the Loop that thread runs, one poll()
// over the listener and every client connection. Separate from the client, which a rank needs without the server.
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <map>
#include <unordered_map>
#include <vector>

#include "base/error.hpp"
#include "base/logging.hpp"
#include "base/threads.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/tcp_store_bytes.hpp"

namespace braid::bootstrap {

namespace {

using store_bytes::bytesOf;
using store_bytes::decodeU64;
using store_bytes::encodeI64;
using store_bytes::printable;
using Clock = std::chrono::steady_clock;

// An unauthenticated connection gets this long to prove the token; then it is dropped so that port scanners
// and stuck peers do not pile up.
constexpr auto kAuthTimeout = std::chrono::seconds(30);
// After accept() fails for lack of fds, stop polling the listener this long instead of spinning on it.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// At most this much is read from one connection per poll round, so one 64 MiB set cannot starve the others.
constexpr std::size_t kReadBudget = std::size_t{1} << 20;
constexpr std::size_t kReadChunk = std::size_t{256} << 10;

}  // namespace

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
      if (!wire::randomBytes(c->nonce.data(), c->nonce.size())) {
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
    thread_ = startThread("the rendezvous store's server thread", [loop] { loop->run(); });
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

std::unique_ptr<TcpStoreServer> serveStoreHere(const std::string& ifname, const std::string& token) {
  auto server = std::make_unique<TcpStoreServer>();
  server->start(tcp::Address{tcp::hostAddressForPeers(ifname), 0}, token);
  return server;
}

}  // namespace braid::bootstrap
