#include "bootstrap/tcp_mesh_rendezvous.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "base/logging.hpp"
#include "bootstrap/unique_id.hpp"
#include "transport/tcp/crypto.hpp"
#include "transport/tcp/handshake.hpp"
#include "transport/tcp/interfaces.hpp"
#include "transport/tcp/socket.hpp"

namespace braid::bootstrap {

namespace {

constexpr double kHelloSeconds = 10;

std::string toHex(std::span<const std::byte> bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (std::byte b : bytes) {
    out += kDigits[static_cast<unsigned>(b) >> 4];
    out += kDigits[static_cast<unsigned>(b) & 15];
  }
  return out;
}

std::vector<std::byte> fromHex(const std::string& text, const char* what) {
  auto digit = [&](char c) -> unsigned {
    if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<unsigned>(c - 'A' + 10);
    fail(ErrorCode::kInternal, {}, "malformed ", what, " in the store");
  };
  if (text.size() % 2 != 0) fail(ErrorCode::kInternal, {}, "malformed ", what, " in the store");
  std::vector<std::byte> out(text.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::byte>(digit(text[2 * i]) << 4 | digit(text[2 * i + 1]));
  }
  return out;
}

std::vector<std::byte> randomBytesOrFail(std::size_t n) {
  std::vector<std::byte> out(n);
  if (!tcp::randomBytes(out.data(), n)) fail(ErrorCode::kInternal, {}, "RAND_bytes failed (OpenSSL)");
  return out;
}

// The non-empty pieces of a comma-separated list.
std::vector<std::string_view> commaList(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    if (comma != 0) out.push_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  return out;
}

// The hosts this rank listens on: the caller's list, or one per rail of the interfaces BRAID_IFNAME picks.
std::vector<std::string> railHosts(const MeshRendezvous& how) {
  std::vector<std::string> hosts;
  if (how.listenHost.empty()) {
    for (const auto& i : tcp::railInterfaces(tcp::listInterfaces(), how.ifname)) hosts.push_back(i.hostForPeers());
    return hosts;
  }
  for (std::string_view h : commaList(how.listenHost)) hosts.emplace_back(h);
  if (hosts.empty())
    fail(ErrorCode::kInvalidArgument, {}, "TCP mesh: no address to listen on in '", how.listenHost, "'");
  return hosts;
}

// The next connection on any of the listeners; Timeout when none arrives before the deadline.
tcp::Socket acceptAny(std::vector<tcp::Socket>& listeners, Deadline deadline) {
  if (listeners.size() == 1) return listeners.front().accept(deadline);
  std::vector<pollfd> fds;
  for (const auto& l : listeners) fds.push_back(pollfd{l.fd(), POLLIN, 0});
  for (;;) {
    for (auto& l : listeners) {
      tcp::Socket s = l.tryAccept();
      if (s.valid()) return s;
    }
    if (deadline.expired()) fail(ErrorCode::kTimeout, {}, "no connection arrived before the deadline");
    // Slices of at most 100 ms, so that a cancelled deadline (an aborted creation) is seen.
    const int ms = static_cast<int>(std::min(100.0, deadline.secondsLeft() * 1000.0)) + 1;
    for (auto& f : fds) f.revents = 0;
    if (::poll(fds.data(), fds.size(), ms) < 0 && errno != EINTR) {
      fail(ErrorCode::kInternal, {}, "poll on the TCP mesh's listeners: ", std::strerror(errno));
    }
  }
}

// A peer's published "HOST:PORT[,HOST:PORT...]", one per rail.
std::vector<tcp::Address> parseRails(const std::string& text, int peer) {
  std::vector<tcp::Address> out;
  for (std::string_view a : commaList(text)) out.push_back(tcp::Address::parse(a));
  if (out.empty()) fail(ErrorCode::kInternal, {}, "TCP mesh: rank ", peer, " published no address");
  return out;
}

}  // namespace

std::vector<std::string> meshInterfaceNames(const std::string& ifname) {
  std::vector<std::string> names;
  try {
    for (const auto& i : tcp::railInterfaces(tcp::listInterfaces(), ifname)) names.push_back(i.name);
  } catch (const Error&) {
    names.clear();
  }
  return names;
}

std::unique_ptr<tcp::TcpMesh> joinTcpMesh(Store& store, int rank, int size, const MeshRendezvous& how,
                                          Deadline deadline) {
  const ErrorContext ctx{.rank = rank, .op = "create"};
  const int streams = how.options.streams;
  if (streams < 1 || streams > 64) {
    fail(ErrorCode::kInvalidArgument, ctx, "BRAID_TCP_STREAMS=", streams, " must be within 1..64");
  }
  // The communicator's id (not secret: it tells apart connections meant for other communicators) and, without
  // BRAID_TOKEN, its secret (256 bits, only as private as the store's channel).
  if (rank == 0) {
    store.set(how.prefix + "/comm_id", toHex(randomBytesOrFail(tcp::kCommIdBytes)));
    if (how.token.empty()) store.set(how.prefix + "/secret", toHex(randomBytesOrFail(32)));
  }
  tcp::CommId commId{};
  const auto idBytes = fromHex(store.get(how.prefix + "/comm_id", deadline), "communicator id");
  if (idBytes.size() != commId.size()) fail(ErrorCode::kInternal, ctx, "communicator id of the wrong length");
  std::memcpy(commId.data(), idBytes.data(), commId.size());
  const std::vector<std::byte> secret =
      how.token.empty()
          ? fromHex(store.get(how.prefix + "/secret", deadline), "secret")
          : std::vector<std::byte>(reinterpret_cast<const std::byte*>(how.token.data()),
                                   reinterpret_cast<const std::byte*>(how.token.data()) + how.token.size());

  const std::vector<std::string> rails = railHosts(how);
  // A listener on each rail's address, never on a wildcard one (docs/SECURITY.md, "Where listeners bind").
  std::vector<tcp::Socket> listeners;
  std::string published;
  for (const auto& h : rails) {
    listeners.push_back(tcp::listenOn(tcp::Address{h, 0}, size * streams + 16));
    published += strCat(published.empty() ? "" : ",", listeners.back().localAddress().toString());
  }
  if (rails.size() > 1) {
    logLine(LogLevel::kInfo, rank,
            strCat("TCP mesh: ", rails.size(), " rails (", published, "), ", streams,
                   " streams per peer taking them in turn"));
    if (static_cast<std::size_t>(streams) < rails.size()) {
      logLine(LogLevel::kWarn, rank,
              strCat("TCP mesh: ", rails.size(), " rails but BRAID_TCP_STREAMS=", streams, ": only ", streams,
                     " of them carry data (set it to a multiple of ", rails.size(), ")"));
    }
  }
  const auto addresses = allGather(store, how.prefix + "/addr", rank, size, published, deadline);

  std::vector<std::vector<tcp::Socket>> sockets(static_cast<std::size_t>(size));
  for (auto& s : sockets) s.resize(static_cast<std::size_t>(streams));
  // Lower ranks first: a rank connects to every lower rank, then accepts from every higher one. The waits form a
  // chain towards rank 0, which only accepts, so no two ranks wait for each other.
  for (int peer = 0; peer < rank; ++peer) {
    const std::vector<tcp::Address> theirs = parseRails(addresses[static_cast<std::size_t>(peer)], peer);
    for (int s = 0; s < streams; ++s) {
      tcp::Socket socket = tcp::connectTo(theirs[static_cast<std::size_t>(s) % theirs.size()], deadline);
      tcp::helloAsConnector(socket, commId, secret, rank, s, deadline);
      sockets[static_cast<std::size_t>(peer)][static_cast<std::size_t>(s)] = std::move(socket);
    }
  }
  int missing = (size - 1 - rank) * streams;
  while (missing > 0) {
    tcp::Socket socket;
    try {
      socket = acceptAny(listeners, deadline);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kTimeout) throw;
      std::string who;
      for (int peer = rank + 1; peer < size; ++peer) {
        if (!sockets[static_cast<std::size_t>(peer)].back().valid()) who += strCat(who.empty() ? "" : ", ", peer);
      }
      ErrorContext c = ctx;
      fail(ErrorCode::kTimeout, c, "TCP mesh: ranks ", who, " never connected to ", published);
    }
    // A peer sends its hello as soon as it connects: one that does not within a few seconds is not a peer, and
    // must not hold up the others.
    Deadline helloDeadline = Deadline::after(kHelloSeconds);
    if (deadline.at() < helloDeadline.at()) helloDeadline = deadline;
    helloDeadline = helloDeadline.cancellable(deadline.cancelFlag());
    std::string why;
    const auto hello = tcp::helloAsAcceptor(socket, commId, secret, size, streams, helloDeadline, &why);
    if (hello && hello->rank > rank &&
        !sockets[static_cast<std::size_t>(hello->rank)][static_cast<std::size_t>(hello->stream)].valid()) {
      sockets[static_cast<std::size_t>(hello->rank)][static_cast<std::size_t>(hello->stream)] = std::move(socket);
      --missing;
      continue;
    }
    if (hello) why = strCat("rank ", hello->rank, " stream ", hello->stream, " connected twice or out of turn");
    logLine(LogLevel::kWarn, rank, strCat("TCP mesh: dropped a connection from ", socket.peer(), ": ", why));
  }
  for (auto& s : sockets[static_cast<std::size_t>(rank)]) s = tcp::Socket();
  for (auto& row : sockets) {
    if (!row.empty() && !row.front().valid()) row.clear();
  }
  return std::make_unique<tcp::TcpMesh>(rank, size, std::move(sockets), how.options);
}

}  // namespace braid::bootstrap
