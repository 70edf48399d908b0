#include "bootstrap/launch_rendezvous.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <vector>

#include "base/error.hpp"
#include "base/logging.hpp"
#include "bootstrap/pmix.hpp"
#include "bootstrap/unique_id.hpp"
#include "transport/tcp/interfaces.hpp"

namespace braid::bootstrap {

namespace {

// Numeric addresses `host` resolves to on this machine ("" entries never).
std::vector<std::string> resolveHere(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  std::vector<std::string> out;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0) return out;
  for (addrinfo* a = list; a; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
      out.emplace_back(text);
    }
  }
  ::freeaddrinfo(list);
  return out;
}

bool isLoopback(const std::string& address) { return address.starts_with("127.") || address == "::1"; }

// Where rank 0's store listens when the launcher names the root by a host name (torchrun, srun): one interface,
// never all of them. The name's own address when it is one of this host's interfaces; a loopback address when it
// resolves to one (Debian maps a host's own name to 127.0.1.1) and every rank runs here; else the interface
// BRAID_IFNAME selects, which is the one the other hosts reach when the name resolves elsewhere to this host.
tcp::Address chooseBind(const LaunchIdentity& id, const Settings& settings) {
  // A numeric loopback root (MASTER_ADDR=127.0.0.1) is what every rank dials: they all run here.
  if (isLoopback(id.root.host)) return id.root;
  const auto resolved = resolveHere(id.root.host);
  const auto local = tcp::listInterfaces();
  for (const auto& address : resolved) {
    if (isLoopback(address)) continue;
    for (const auto& itf : local) {
      if (itf.address == address) return {address, id.root.port};
    }
  }
  const bool singleHost = id.localSize > 0 && id.localSize == id.size;
  for (const auto& address : resolved) {
    if (isLoopback(address) && singleHost) return {address, id.root.port};
  }
  return {tcp::hostAddressForPeers(settings.ifname), id.root.port};
}

// What rank 0 publishes through PMIx: "ok\nHOST:PORT\nTOKEN", or "error\nMESSAGE" when its store could not start,
// so the other ranks fail at once with rank 0's reason instead of waiting out BRAID_TIMEOUT.
constexpr std::string_view kOk = "ok\n";
constexpr std::string_view kError = "error\n";

void publishRootThroughPmix(LaunchIdentity& id, JobRendezvous& job, const Settings& settings) {
  const double timeoutSeconds = settings.timeoutSeconds;
  std::string published;
  if (id.rank == 0) {
    // PMIx only shows the value to the job's own processes, so a random token there is a real secret.
    if (id.token.empty()) id.token = randomToken();
    try {
      job.server = serveStoreHere(settings.ifname, id.token);
    } catch (const Error& e) {
      try {
        pmix::shareFromRankZero(0, strCat(kError, e.message()), timeoutSeconds);
      } catch (const Error&) {
        // The store's failure is the one to report; the others then time out in their fence.
      }
      throw;
    }
    published = strCat(kOk, job.server->address().toString(), "\n", id.token);
  }
  published = pmix::shareFromRankZero(id.rank, published, timeoutSeconds);
  if (published.starts_with(kError)) {
    fail(ErrorCode::kUnavailable, {.rank = id.rank, .peer = 0, .op = "create"},
         "rank 0 could not start the rendezvous store: ", published.substr(kError.size()));
  }
  const std::size_t newline = published.find('\n', kOk.size());
  if (!published.starts_with(kOk) || newline == std::string::npos) {
    fail(ErrorCode::kInternal, {.rank = id.rank, .peer = 0, .op = "create"},
         "malformed rendezvous address from rank 0 via PMIx: '", published, "'");
  }
  id.root = tcp::Address::parse(published.substr(kOk.size(), newline - kOk.size()));
  id.token = published.substr(newline + 1);
}

}  // namespace

JobRendezvous rendezvousFromEnvironment(const Settings& settings, const Settings::Lookup& env,
                                        const PmixProbe& pmixProbe, const std::atomic<bool>* cancel) {
  JobRendezvous job;
  job.identity = readLaunchIdentity(settings, env, pmixProbe);
  LaunchIdentity& id = job.identity;
  if (id.rootViaPmix) {
    publishRootThroughPmix(id, job, settings);
  } else if (id.rank == 0) {
    const bool anyInterface = id.bind.host == "0.0.0.0" || id.bind.host == "::";
    job.server = std::make_unique<TcpStoreServer>();
    job.server->start(anyInterface ? chooseBind(id, settings) : id.bind, id.token);
  }
  if (logEnabled(LogLevel::kInfo)) {
    logLine(LogLevel::kInfo, id.rank,
            strCat("launched by ", id.launcher, ": rank ", id.rank, " of ", id.size, ", local rank ", id.localRank,
                   " of ", id.localSize, "; store at ", id.root.toString(), id.rootViaPmix ? " (via PMIx)" : ""));
  }
  job.client = std::make_unique<TcpStoreClient>(
      id.root, id.token, Deadline::after(settings.timeoutSeconds).cancellable(cancel), settings.timeoutSeconds);
  return job;
}

}  // namespace braid::bootstrap
