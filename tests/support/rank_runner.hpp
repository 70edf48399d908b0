// Runs a test body on N ranks: as threads of this process (over the in-memory transport, or over TCP when the
// settings say BRAID_TRANSPORT=tcp), or as forked processes (over shared memory or TCP). Each returns one message per
// rank, empty when that rank's body finished without throwing.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "braid/braid.hpp"

namespace braid::testing {

using Body = std::function<void(Communicator&)>;

/// Settings for tests: the environment's, with a timeout short enough that a hang fails fast.
Settings testSettings();

std::vector<std::string> runThreads(int ranks, const Body& body, const Settings& settings = testSettings());
/// Forks `ranks` children that each run `child(rank)`, whose returned message (or exception) is that rank's
/// failure ("" = passed), and collects them, killing what still runs after `timeoutSeconds`.
/// A rank whose fork (or pipe) failed fails, naming the rank and errno, and the ranks already started are stopped.
std::vector<std::string> forkRanks(int ranks, const std::function<std::string(int rank)>& child, double timeoutSeconds);
/// forkRanks with `forkOnce` in place of fork() (the runner's own tests make it fail).
std::vector<std::string> forkRanksWith(int ranks, const std::function<std::string(int rank)>& child,
                                       double timeoutSeconds, const std::function<pid_t()>& forkOnce);
/// Every rank is a child process that creates its communicator from a unique id made here; the whole run is
/// killed after `timeoutSeconds`, which is then reported for the ranks still running.
/// `transport` overrides BRAID_TRANSPORT for these ranks ("shm", "tcp"; "" keeps the environment's).
std::vector<std::string> runProcesses(int ranks, const Body& body, double timeoutSeconds = 120,
                                      const std::string& transport = "");
/// runProcesses with explicit settings for every rank (transport, heartbeats, timeouts).
std::vector<std::string> runProcessesWith(int ranks, const Settings& settings, const Body& body,
                                          double timeoutSeconds = 120);
/// runProcessesWith with each rank's own settings (BRAID_HOST_ID, say, to lay the ranks out as on several hosts).
std::vector<std::string> runProcessesWith(int ranks, const std::function<Settings(int rank)>& settingsOf,
                                          const Body& body, double timeoutSeconds = 120);
/// Settings for thread ranks over TCP (runThreads with these joins them through a TCP store and mesh).
inline Settings tcpSettings() {
  Settings s = testSettings();
  s.transport = "tcp";
  return s;
}

/// In a forked child: become rank `rank` of `size` as a launcher would start it (BRAID_RANK, BRAID_WORLD_SIZE,
/// BRAID_ROOT_ADDR=`root`, a fixed BRAID_TOKEN, BRAID_TRANSPORT, BRAID_TIMEOUT), with other launchers' variables
/// cleared so that the test's own environment cannot choose for it.
void actAsLaunchedRank(int rank, int size, const std::string& root, const std::string& transport,
                       double timeoutSeconds);

/// Empty when every rank succeeded; else one line per failed rank.
std::string failures(const std::vector<std::string>& perRank);

}  // namespace braid::testing
