// A user-space TCP proxy for the fault tests: it forwards every connection it accepts to one target,
// both ways, and does to the traffic what the test asks: added latency, stalls like a lost segment's
// retransmission, a reset (RST to both ends), a half-open link (nothing passes, nothing closes) or a clean close.
// netem, tc's gact and iptables are unavailable on these machines; a proxy between ranks reaches the same states.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "transport/tcp/socket.hpp"

namespace braid::testing {

class TcpProxy {
 public:
  /// Listens on 127.0.0.1, an ephemeral port, and starts forwarding to `target`.
  explicit TcpProxy(tcp::Address target);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  const tcp::Address& address() const { return address_; }
  const tcp::Address& target() const { return target_; }

  /// Every chunk forwarded from now on waits `ms` first (latency, and so a lower rate).
  void setDelay(int ms) { delayMs_.store(ms); }
  /// Each chunk forwarded from now on stalls `ms` with probability `chance` (a lost segment's retransmission).
  void setStalls(double chance, int ms);
  /// Every connection: RST to both ends now.
  void reset() { fault_.store(kReset); }
  /// Nothing passes any more, and nothing is closed: the link went half-open.
  void blackhole() { fault_.store(kBlackhole); }
  /// Every connection: FIN to both ends now.
  void close() { fault_.store(kClose); }
  /// Bytes forwarded so far, both ways.
  std::uint64_t forwarded() const { return forwarded_.load(); }

 private:
  enum Fault { kNone, kReset, kBlackhole, kClose };
  struct Link;

  void acceptLoop();
  void pump(const std::shared_ptr<Link>& link, int from, int to);
  void endLink(Link& link, bool reset);

  tcp::Address target_;
  tcp::Socket listener_;
  tcp::Address address_;
  std::atomic<bool> stop_{false};
  std::atomic<int> fault_{kNone};
  std::atomic<int> delayMs_{0};
  std::atomic<int> stallMs_{0};
  std::atomic<double> stallChance_{0};
  std::atomic<std::uint64_t> forwarded_{0};
  std::mutex mu_;
  std::mt19937 rng_{12345};           // under mu_
  std::vector<std::thread> threads_;  // under mu_
  std::thread acceptor_;
};

}  // namespace braid::testing
