#include "support/tcp_proxy.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "base/error.hpp"

namespace braid::testing {

// Both directions of one proxied connection. The pumps poll in 20 ms slices so that a fault (or the proxy's end)
// is acted on within that; whichever pump acts first ends the link, under its mutex, for both.
// The fds are closed only when both pumps are done with them (the last owner of the Link), so neither polls an fd
// the other closed.
struct TcpProxy::Link {
  std::mutex mu;
  int fds[2] = {-1, -1};  // the accepted end, the end towards the target
  bool ended = false;
  ~Link() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
};

TcpProxy::TcpProxy(tcp::Address target) : target_(std::move(target)) {
  listener_ = tcp::listenOn(tcp::Address{"127.0.0.1", 0}, 64);
  address_ = listener_.localAddress();
  acceptor_ = std::thread([this] { acceptLoop(); });
}

TcpProxy::~TcpProxy() {
  stop_.store(true);
  acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

void TcpProxy::setStalls(double chance, int ms) {
  stallMs_.store(ms);
  stallChance_.store(chance);
}

void TcpProxy::acceptLoop() {
  while (!stop_.load()) {
    pollfd p{listener_.fd(), POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    tcp::Socket in = listener_.tryAccept();
    if (!in.valid()) continue;
    tcp::Socket out;
    try {
      out = tcp::connectTo(target_, Deadline::after(5));
    } catch (const Error&) {
      continue;  // the target is gone: the accepted end closes, as a dead host's would
    }
    auto link = std::make_shared<Link>();
    link->fds[0] = in.release();
    link->fds[1] = out.release();
    std::lock_guard lock(mu_);
    threads_.emplace_back([this, link] { pump(link, 0, 1); });
    threads_.emplace_back([this, link] { pump(link, 1, 0); });
  }
}

void TcpProxy::endLink(Link& link, bool reset) {
  std::lock_guard lock(link.mu);
  if (link.ended) return;
  link.ended = true;
  for (int fd : link.fds) {
    if (reset) {
      const linger hard{1, 0};  // the close, once both pumps let go, sends RST instead of FIN
      (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    } else {
      (void)::shutdown(fd, SHUT_RDWR);  // FIN now
    }
  }
}

// One direction. An end that closes is passed on as a TCP path would: what was read from it is still delivered,
// then the other end gets a FIN (half-close); the other direction goes on until it ends too.
void TcpProxy::pump(const std::shared_ptr<Link>& link, int from, int to) {
  std::vector<char> buf(64 << 10);
  const int src = link->fds[from];
  const int dst = link->fds[to];
  for (;;) {
    const int fault = fault_.load();
    if (stop_.load() || fault == kReset || fault == kClose) {
      endLink(*link, fault == kReset || stop_.load());
      return;
    }
    {
      std::lock_guard lock(link->mu);
      if (link->ended) return;
    }
    if (fault == kBlackhole) {  // read nothing, write nothing, close nothing
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    pollfd p{src, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    const ssize_t n = ::recv(src, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n <= 0) {  // this end closed (FIN) or broke: pass it on, and this direction is done
      (void)::shutdown(dst, SHUT_WR);
      return;
    }
    int wait = delayMs_.load();
    if (const double chance = stallChance_.load(); chance > 0) {
      std::lock_guard lock(mu_);
      if (std::uniform_real_distribution<double>(0, 1)(rng_) < chance) wait += stallMs_.load();
    }
    if (wait > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    for (ssize_t sent = 0; sent < n;) {
      if (fault_.load() != kNone || stop_.load()) break;  // acted on at the loop's top
      pollfd q{dst, POLLOUT, 0};
      if (::poll(&q, 1, 20) <= 0) continue;
      const ssize_t m = ::send(dst, buf.data() + sent, static_cast<std::size_t>(n - sent), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (m < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (m <= 0) {  // the far end is gone: nothing more can go this way
        (void)::shutdown(src, SHUT_RD);
        return;
      }
      sent += m;
      forwarded_.fetch_add(static_cast<std::uint64_t>(m));
    }
  }
}

}  // namespace braid::testing
