#include "bootstrap/launch_rendezvous.hpp"

#include "base/error.hpp"
#include "base/logging.hpp"
#include "bootstrap/pmix.hpp"
#include "bootstrap/unique_id.hpp"

namespace braid::bootstrap {

namespace {

// What rank 0 publishes through PMIx: "ok\nHOST:PORT\nTOKEN", or "error\nMESSAGE" when its store could not start,
// so the other ranks fail at once with rank 0's reason instead of waiting out BRAID_TIMEOUT.
constexpr std::string_view kOk = "ok\n";
constexpr std::string_view kError = "error\n";

void publishRootThroughPmix(LaunchIdentity& id, JobRendezvous& job, double timeoutSeconds) {
  std::string published;
  if (id.rank == 0) {
    // PMIx only shows the value to the job's own processes, so a random token there is a real secret.
    if (id.token.empty()) id.token = randomToken();
    try {
      job.server = std::make_unique<TcpStoreServer>();
      job.server->start({tcp::hostAddressForPeers(), 0}, id.token);
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
                                        const PmixProbe& pmixProbe) {
  JobRendezvous job;
  job.identity = readLaunchIdentity(settings, env, pmixProbe);
  LaunchIdentity& id = job.identity;
  if (id.rootViaPmix) {
    publishRootThroughPmix(id, job, settings.timeoutSeconds);
  } else if (id.rank == 0) {
    job.server = std::make_unique<TcpStoreServer>();
    job.server->start(id.bind, id.token);
  }
  if (logEnabled(LogLevel::kInfo)) {
    logLine(LogLevel::kInfo, id.rank,
            strCat("launched by ", id.launcher, ": rank ", id.rank, " of ", id.size, ", local rank ", id.localRank,
                   " of ", id.localSize, "; store at ", id.root.toString(), id.rootViaPmix ? " (via PMIx)" : ""));
  }
  job.client = std::make_unique<TcpStoreClient>(id.root, id.token, Deadline::after(settings.timeoutSeconds),
                                                settings.timeoutSeconds);
  return job;
}

}  // namespace braid::bootstrap
