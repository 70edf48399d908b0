// Starts the ranks of a job on this machine (`braid run`, `braid bench --nranks N`): environment, CPU binding,
// prefixed output, and stopping the whole job when one rank fails.
#pragma once

#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

namespace braid::tools {

struct LaunchSpec {
  int ranks = 1;
  std::string bind = "none";                                  // none | core | block | numa
  std::vector<std::string> argv;                              // program and its arguments (PATH lookup like execvp)
  std::vector<std::pair<std::string, std::string>> extraEnv;  // set in every rank (after the standard ones)
  bool prefixOutput = true;                                   // "[3] line" on stdout/stderr
  // Where the ranks' output (and the launcher's warnings) go: the launcher's own stdout/stderr unless a caller,
  // such as a test, wants it elsewhere. With prefixOutput the launcher writes there; without it the ranks do.
  int outFd = STDOUT_FILENO;
  int errFd = STDERR_FILENO;
};

struct LaunchResult {
  int exitStatus = 0;   // 0 when every rank exited 0; else the first failing rank's exit code, or 128+signal
  std::string message;  // "" or e.g. "rank 2 was killed by signal 9 (Killed); stopped ranks 0, 1, 3"
};

/// Runs spec.ranks copies of spec.argv and returns when all have exited (or were stopped).
///
/// Every rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torchrun's names),
/// BRAID_RANK, BRAID_WORLD_SIZE, BRAID_LOCAL_RANK, BRAID_ROOT_ADDR (a port other than MASTER_PORT) and a fresh
/// BRAID_TOKEN, then spec.extraEnv. Each rank leads its own process group. Ranks read stdin from /dev/null, except
/// rank 0 when the launcher's stdin is not a terminal (ranks are not in the terminal's foreground group, so a read
/// from it would stop them).
///
/// When a rank fails, the others get SIGTERM and, 3 s later, SIGKILL. SIGINT, SIGTERM and SIGHUP received meanwhile
/// are forwarded to every rank (same 3 s escalation); the status is then 128+signal. A program that cannot be found
/// gives status 127 (126 when found but not executable) and starts no rank; a rank that fails between fork and exec
/// (exec error, CPU binding refused) exits 127 and the message says why. Output lines held back for want of a
/// newline are written with one when their stream ends; a line past 1 MiB is cut into pieces of that size.
///
/// Installs handlers for SIGCHLD, SIGINT, SIGTERM, SIGHUP for the duration of the call and restores the previous
/// ones: one launch at a time per process. Throws braid::Error (InvalidArgument) for a malformed spec.
LaunchResult launchLocal(const LaunchSpec& spec);

/// "0-3,8,10-11" (the kernel's cpulist format) -> {0,1,2,3,8,10,11}; throws braid::Error on malformed input.
std::vector<int> parseCpuList(const std::string& text);

}  // namespace braid::tools
