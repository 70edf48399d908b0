// The local launcher's process supervision: forks the ranks, waits for them, forwards signals, and stops the job
// when one rank fails. What each rank is started with is worked out in rank_setup.cpp, and their output is passed
// on by line_relay.cpp; this file owns the processes, pipes and signal handlers.
#include "run/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <optional>
#include <string_view>

#include "errors.hpp"
#include "run/fd.hpp"
#include "run/line_relay.hpp"
#include "run/rank_setup.hpp"

namespace braid::tools {

namespace {

using Clock = std::chrono::steady_clock;

// 3 s after SIGTERM (or a forwarded Ctrl-C): enough for a rank to flush logs and close sockets, short enough that a
// failed job ends promptly instead of leaving its peers blocked in a collective until their own timeout.
constexpr auto kStopGrace = std::chrono::seconds(3);
// A process dies on SIGKILL once it leaves the kernel; past 5 s it is stuck in uninterruptible I/O and waiting
// longer would only hang the launcher as well.
constexpr auto kKillWait = std::chrono::seconds(5);
// Once every rank has exited, grandchildren that inherited a rank's stdout may still hold the pipe open.
constexpr auto kDrainWait = std::chrono::seconds(1);
// A forked rank reports within milliseconds whether exec worked; the bound only guards against a stalled machine.
constexpr int kExecConfirmMs = 10000;
// Poll's timeout when nothing happens: signals and child exits wake it at once through the wake pipe, so this only
// bounds how late a deadline is noticed.
constexpr int kPollMs = 200;
// What one read() takes from a rank's output pipe.
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

// The signal handler's only way out: it writes the signal number into this pipe, which the poll loop watches.
std::atomic<int> gWakeFd{-1};

void onSignal(int sig) {
  const int savedErrno = errno;
  const int fd = gWakeFd.load();
  if (fd >= 0) {
    const auto byte = static_cast<unsigned char>(sig);
    [[maybe_unused]] ssize_t n = ::write(fd, &byte, 1);  // a full pipe already holds a wake-up
  }
  errno = savedErrno;
}

std::string errnoText(int err) { return std::strerror(err); }

// pipe2 with close-on-exec on both ends, so no rank inherits another rank's pipes.
bool makePipe(Fd& readEnd, Fd& writeEnd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  readEnd = Fd(fds[0]);
  writeEnd = Fd(fds[1]);
  return true;
}

struct Stream {
  Fd fd;
  LineRelay relay;
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  int waitStatus = 0;
  std::string launchError;  // what the child reported before exec, e.g. "cannot execute 'x': Permission denied"
  std::optional<Stream> out, err;
};

// What a child writes to its report pipe when it cannot become the program.
struct ChildReport {
  int stage;  // kStageAffinity or kStageExec
  int err;
};
constexpr int kStageAffinity = 1;
constexpr int kStageExec = 2;

// Owns the launcher's signal handling for one launch: SIGCHLD and the forwarded signals wake the poll loop.
class SignalScope {
 public:
  SignalScope() {
    Fd readEnd, writeEnd;
    if (!makePipe(readEnd, writeEnd)) failErrno("pipe2 (launcher wake-up pipe)", errno);
    ::fcntl(readEnd.get(), F_SETFL, O_NONBLOCK);
    ::fcntl(writeEnd.get(), F_SETFL, O_NONBLOCK);
    wakeRead_ = std::move(readEnd);
    wakeWrite_ = std::move(writeEnd);
    gWakeFd.store(wakeWrite_.get());
    install(SIGCHLD, true);
    // A signal the launcher was started ignoring (nohup, a background job) stays ignored, for it and its ranks.
    for (int sig : kForwardedSignals) install(sig, false);
  }
  ~SignalScope() {
    for (std::size_t i = 0; i < count_; ++i) ::sigaction(saved_[i].sig, &saved_[i].action, nullptr);
    gWakeFd.store(-1);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  int wakeFd() const { return wakeRead_.get(); }

  // In the forked child, before unblocking signals: the dispositions the launcher itself was started with.
  void restoreInChild() const {
    for (std::size_t i = 0; i < count_; ++i) {
      struct sigaction action = saved_[i].action;
      if (action.sa_handler != SIG_IGN) {
        action = {};
        action.sa_handler = SIG_DFL;
      }
      ::sigaction(saved_[i].sig, &action, nullptr);
    }
  }

  static sigset_t handledSet() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    for (int sig : kForwardedSignals) sigaddset(&set, sig);
    return set;
  }

 private:
  void install(int sig, bool evenIfIgnored) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN && !evenIfIgnored) return;
    struct sigaction action {};
    action.sa_handler = onSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(sig, &action, &saved_[count_].action);
    saved_[count_++].sig = sig;
  }

  struct Saved {
    int sig = 0;
    struct sigaction action {};
  };
  Fd wakeRead_, wakeWrite_;
  Saved saved_[1 + std::size(kForwardedSignals)];
  std::size_t count_ = 0;
};

std::vector<char*> cStrings(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (auto& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

// Everything the child needs, prepared before fork: after it the child may only make async-signal-safe calls.
struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* shellArgv;  // for a file without "#!", which execvp hands to /bin/sh
  char* const* envp;
  int stdinFd, outFd, errFd, reportFd;
  const cpu_set_t* cpus;  // null: not pinned
  pid_t launcher;
  const SignalScope* signals;
  sigset_t mask;  // the launcher's signal mask before the fork blocked its handled signals
};

[[noreturn]] void reportAndExit(int fd, int stage, int err) {
  ::signal(SIGPIPE, SIG_IGN);  // the launcher may have stopped listening; dying of SIGPIPE would hide the report
  const ChildReport report{stage, err};
  [[maybe_unused]] ssize_t n = ::write(fd, &report, sizeof report);
  ::_exit(127);
}

[[noreturn]] void becomeRank(const ChildPlan& plan) {
  ::setpgid(0, 0);  // its own group, so stopping the rank stops everything it started
  // A launcher killed outright (SIGKILL, OOM) cannot stop its ranks; the kernel does it for it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != plan.launcher) ::_exit(1);
  plan.signals->restoreInChild();
  ::sigprocmask(SIG_SETMASK, &plan.mask, nullptr);
  // Through fds above 2 first, so that one source already sitting on 0..2 is not overwritten by another dup2.
  const int in = ::fcntl(plan.stdinFd, F_DUPFD_CLOEXEC, 3);
  const int out = ::fcntl(plan.outFd, F_DUPFD_CLOEXEC, 3);
  const int err = ::fcntl(plan.errFd, F_DUPFD_CLOEXEC, 3);
  if (in < 0 || out < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) {
    reportAndExit(plan.reportFd, kStageExec, errno);
  }
  if (plan.cpus && ::sched_setaffinity(0, sizeof(cpu_set_t), plan.cpus) != 0) {
    reportAndExit(plan.reportFd, kStageAffinity, errno);
  }
  ::execve(plan.path, plan.argv, plan.envp);
  if (errno == ENOEXEC) ::execve("/bin/sh", plan.shellArgv, plan.envp);
  reportAndExit(plan.reportFd, kStageExec, errno);
}

std::string joinRanks(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

std::string describeExit(int rank, int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return strCat("rank ", rank, " was killed by signal ", sig, " (", strsignal(sig), ")");
  }
  return strCat("rank ", rank, " exited with status ", WEXITSTATUS(status));
}

int statusCode(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

bool failed(int status) { return !(WIFEXITED(status) && WEXITSTATUS(status) == 0); }

// Signals every rank still running; its whole process group, so that what the rank started stops with it.
std::vector<int> signalRunning(std::vector<Rank>& ranks, int sig) {
  std::vector<int> signalled;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r].running) continue;
    if (::kill(-ranks[r].pid, sig) != 0) ::kill(ranks[r].pid, sig);
    signalled.push_back(static_cast<int>(r));
  }
  return signalled;
}

// Reads what is available on one rank's pipe; closes it at end of file, writing out a last partial line.
void pump(Stream& stream) {
  char buffer[kReadChunk];
  const ssize_t n = ::read(stream.fd.get(), buffer, sizeof buffer);
  if (n > 0) {
    stream.relay.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    stream.relay.flush();
    stream.fd.reset();
  }
}

// One poll over the wake pipe and every open output pipe. Returns the forwarded signals that arrived.
std::vector<int> pollOnce(std::vector<Rank>& ranks, int wakeFd, int timeoutMs) {
  std::vector<pollfd> fds{{wakeFd, POLLIN, 0}};
  std::vector<Stream*> streams{nullptr};
  for (Rank& rank : ranks) {
    for (auto* stream : {&rank.out, &rank.err}) {
      if (*stream && (*stream)->fd.get() >= 0) {
        fds.push_back({(*stream)->fd.get(), POLLIN, 0});
        streams.push_back(&**stream);
      }
    }
  }
  std::vector<int> signals;
  if (::poll(fds.data(), fds.size(), timeoutMs) <= 0) return signals;
  if (fds[0].revents & POLLIN) {
    unsigned char bytes[64];
    ssize_t n;
    while ((n = ::read(wakeFd, bytes, sizeof bytes)) > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        if (bytes[i] != SIGCHLD) signals.push_back(bytes[i]);
      }
    }
  }
  for (std::size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) pump(*streams[i]);
  }
  return signals;
}

int msUntil(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, kPollMs));
}

void validate(const LaunchSpec& spec) {
  if (spec.ranks < 1) fail(ErrorCode::kInvalidArgument, {}, "launch: ranks=", spec.ranks, " must be at least 1");
  if (spec.argv.empty()) fail(ErrorCode::kInvalidArgument, {}, "launch: no program to run (argv is empty)");
  // spec.bind is checked where it is read, by planBinding (braid bench's peers are placed through it too).
}

// What every rank's start shares, worked out once before the first fork.
struct StartPlan {
  const LaunchSpec& spec;
  std::string path;  // spec.argv[0] found in PATH
  int masterPort, rootPort;
  std::string token;
  std::vector<std::vector<int>> binding;
};

// Forks and execs one rank; returns false when the launch must stop (its reason in startFailure or launchError).
bool startRank(const StartPlan& plan, int r, const SignalScope& signals, int devNull, bool passStdin, char* const* argv,
               char* const* shellArgv, Rank& rank, std::string& startFailure) {
  const LaunchSpec& spec = plan.spec;
  std::vector<std::string> envStrings = rankEnvironment(spec, r, plan.masterPort, plan.rootPort, plan.token);
  std::vector<char*> envp = cStrings(envStrings);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : plan.binding[r]) CPU_SET(cpu, &cpus);

  Fd outRead, outWrite, errRead, errWrite, reportRead, reportWrite;
  const bool piped = spec.prefixOutput;
  if ((piped && (!makePipe(outRead, outWrite) || !makePipe(errRead, errWrite))) || !makePipe(reportRead, reportWrite)) {
    startFailure = strCat("cannot create pipes for rank ", r, ": ", errnoText(errno));
    return false;
  }
  ChildPlan child{plan.path.c_str(),
                  argv,
                  shellArgv,
                  envp.data(),
                  r == 0 && passStdin ? STDIN_FILENO : devNull,
                  piped ? outWrite.get() : spec.outFd,
                  piped ? errWrite.get() : spec.errFd,
                  reportWrite.get(),
                  plan.binding[r].empty() ? nullptr : &cpus,
                  ::getpid(),
                  &signals,
                  {}};
  // Blocked across fork so that no handler runs in the child before it restores the launcher's dispositions.
  const sigset_t handled = SignalScope::handledSet();
  ::pthread_sigmask(SIG_BLOCK, &handled, &child.mask);
  const pid_t pid = ::fork();
  if (pid == 0) becomeRank(child);
  const int forkErrno = errno;
  ::pthread_sigmask(SIG_SETMASK, &child.mask, nullptr);
  if (pid < 0) {
    startFailure = strCat("cannot fork rank ", r, ": ", errnoText(forkErrno));
    return false;
  }
  ::setpgid(pid, pid);  // also here: whichever of parent and child runs first, the group exists before a kill
  rank.pid = pid;
  rank.running = true;
  if (piped) {
    ::fcntl(outRead.get(), F_SETFL, O_NONBLOCK);
    ::fcntl(errRead.get(), F_SETFL, O_NONBLOCK);
    rank.out.emplace(Stream{std::move(outRead), LineRelay(r, spec.outFd)});
    rank.err.emplace(Stream{std::move(errRead), LineRelay(r, spec.errFd)});
  }
  reportWrite.reset();
  // Exec closes the report pipe (close-on-exec) and read sees end of file; a failure arrives as a ChildReport.
  pollfd p{reportRead.get(), POLLIN, 0};
  int ready;
  do {
    ready = ::poll(&p, 1, kExecConfirmMs);  // EINTR: SIGCHLD from a rank that already ended, for one
  } while (ready < 0 && errno == EINTR);
  ChildReport report{};
  if (ready > 0 && ::read(reportRead.get(), &report, sizeof report) == sizeof report) {
    const auto& cpuList = plan.binding[r];
    rank.launchError = report.stage == kStageAffinity
                           ? strCat("rank ", r, ": cannot pin to CPUs ", cpuList.front(), "..", cpuList.back(), ": ",
                                    errnoText(report.err))
                           : strCat("rank ", r, ": cannot execute '", spec.argv[0], "': ", errnoText(report.err));
    return false;  // supervise() reaps it and stops the ranks before it
  }
  return true;
}

// Starts the ranks in order, stopping at the first that cannot start. Returns "" or why no rank could be forked.
std::string startRanks(const StartPlan& plan, const SignalScope& signals, std::vector<Rank>& ranks) {
  std::vector<std::string> argvStrings = plan.spec.argv;
  std::vector<std::string> shellStrings = plan.spec.argv;
  shellStrings[0] = plan.path;
  shellStrings.insert(shellStrings.begin(), "/bin/sh");
  const std::vector<char*> argv = cStrings(argvStrings);
  const std::vector<char*> shellArgv = cStrings(shellStrings);
  Fd devNull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (devNull.get() < 0) return strCat("cannot open /dev/null: ", errnoText(errno));
  // Ranks lead their own process groups, so a read from the terminal would stop them (SIGTTIN): only a pipe or file
  // on stdin is handed on, to rank 0 alone, as mpirun does.
  const bool passStdin = !::isatty(STDIN_FILENO) && ::fcntl(STDIN_FILENO, F_GETFD) >= 0;
  std::string startFailure;
  for (int r = 0; r < plan.spec.ranks; ++r) {
    if (!startRank(plan, r, signals, devNull.get(), passStdin, argv.data(), shellArgv.data(), ranks[r], startFailure)) {
      break;
    }
  }
  return startFailure;
}

// How the job ended: who failed first, which signal the launcher got, whom it had to stop or kill.
struct Ending {
  std::optional<int> failedRank;
  int interruptSignal = 0;
  std::vector<int> stopped;  // still running when the stop began
  std::vector<int> killed;   // still running kStopGrace later
  std::vector<int> stuck;    // still running kKillWait after SIGKILL; left behind
};

bool anyRunning(const std::vector<Rank>& ranks) {
  return std::any_of(ranks.begin(), ranks.end(), [](const Rank& r) { return r.running; });
}

// Waits for every rank, relaying output; stops all of them at the first failure or forwarded signal.
Ending supervise(std::vector<Rank>& ranks, int wakeFd, bool startFailed) {
  Ending ending;
  bool stopping = false;
  Clock::time_point stopDeadline, killDeadline;
  auto beginStop = [&](int sig) {
    stopping = true;
    stopDeadline = Clock::now() + kStopGrace;
    ending.stopped = signalRunning(ranks, sig);
  };
  if (startFailed) beginStop(SIGTERM);

  while (anyRunning(ranks)) {
    // Reap every rank that exited before judging, so that ranks failing together are not counted as stopped.
    std::vector<int> exited;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (!ranks[r].running) continue;
      int status = 0;
      pid_t got;
      do {
        got = ::waitpid(ranks[r].pid, &status, WNOHANG);
      } while (got < 0 && errno == EINTR);
      if (got == ranks[r].pid || (got < 0 && errno == ECHILD)) {
        ranks[r].running = false;
        ranks[r].waitStatus = got < 0 ? (127 << 8) : status;  // ECHILD: someone else reaped it; count it failed
        exited.push_back(static_cast<int>(r));
      }
    }
    if (!stopping) {
      const auto first = std::find_if(exited.begin(), exited.end(), [&](int r) { return failed(ranks[r].waitStatus); });
      if (first != exited.end()) {
        ending.failedRank = *first;
        beginStop(SIGTERM);
      }
    }
    if (!anyRunning(ranks)) break;

    int timeoutMs = kPollMs;
    if (stopping && ending.killed.empty()) {
      if (Clock::now() >= stopDeadline) {
        ending.killed = signalRunning(ranks, SIGKILL);
        killDeadline = Clock::now() + kKillWait;
      } else {
        timeoutMs = msUntil(stopDeadline);
      }
    }
    if (!ending.killed.empty()) {
      if (Clock::now() >= killDeadline) {
        for (std::size_t r = 0; r < ranks.size(); ++r) {
          if (ranks[r].running) ending.stuck.push_back(static_cast<int>(r));
        }
        break;
      }
      timeoutMs = msUntil(killDeadline);
    }

    for (int sig : pollOnce(ranks, wakeFd, timeoutMs)) {
      if (!stopping) {
        ending.interruptSignal = sig;
        beginStop(sig);
      } else {
        signalRunning(ranks, sig);  // a second Ctrl-C reaches the ranks too
      }
    }
  }
  return ending;
}

// The ranks are gone: collects what they wrote last, then writes out partial lines.
void drainOutput(std::vector<Rank>& ranks, int wakeFd) {
  const auto deadline = Clock::now() + kDrainWait;
  auto anyOpen = [&] {
    return std::any_of(ranks.begin(), ranks.end(), [](const Rank& r) {
      return (r.out && r.out->fd.get() >= 0) || (r.err && r.err->fd.get() >= 0);
    });
  };
  while (anyOpen() && Clock::now() < deadline) pollOnce(ranks, wakeFd, msUntil(deadline));
  for (Rank& rank : ranks) {
    for (auto* stream : {&rank.out, &rank.err}) {
      if (*stream) (*stream)->relay.flush();
    }
  }
}

LaunchResult summarize(const std::vector<Rank>& ranks, const Ending& ending, const std::string& startFailure) {
  LaunchResult result;
  std::vector<int> stopped = ending.stopped;
  if (!startFailure.empty()) {
    result = {1, startFailure};
  } else if (ending.failedRank) {
    const Rank& rank = ranks[*ending.failedRank];
    result.exitStatus = statusCode(rank.waitStatus);
    result.message = rank.launchError.empty() ? describeExit(*ending.failedRank, rank.waitStatus) : rank.launchError;
  } else if (ending.interruptSignal != 0) {
    const int sig = ending.interruptSignal;
    result.exitStatus = 128 + sig;
    result.message = strCat("received signal ", sig, " (", strsignal(sig), ")");
    if (!stopped.empty()) result.message += "; forwarded it to ranks " + joinRanks(stopped);
    stopped.clear();
  }
  if (!stopped.empty()) result.message += "; stopped ranks " + joinRanks(stopped);
  if (!ending.killed.empty()) {
    result.message += strCat("; SIGKILL after ", kStopGrace.count(), " s for ranks ", joinRanks(ending.killed));
  }
  if (!ending.stuck.empty()) {
    result.message += strCat("; still there ", kKillWait.count(), " s after SIGKILL, left behind: ranks ",
                             joinRanks(ending.stuck), " (pids");
    for (int r : ending.stuck) result.message += strCat(" ", ranks[r].pid);
    result.message += ")";
  }
  return result;
}

}  // namespace

LaunchResult launchLocal(const LaunchSpec& spec) {
  validate(spec);
  std::string path;
  if (const int err = resolveProgram(spec.argv[0], path); err != 0) {
    return {err == ENOENT || err == ENOTDIR ? 127 : 126,
            strCat("cannot execute '", spec.argv[0], "': ", errnoText(err))};
  }
  const auto [masterPort, rootPort] = pickTwoFreePorts();
  const StartPlan plan{spec, path, masterPort, rootPort, freshToken(), planBinding(spec)};
  std::fflush(nullptr);  // what the caller printed comes before the ranks' output
  SignalScope signals;
  std::vector<Rank> ranks(spec.ranks);
  const std::string startFailure = startRanks(plan, signals, ranks);
  const Ending ending = supervise(ranks, signals.wakeFd(), !startFailure.empty());
  drainOutput(ranks, signals.wakeFd());
  return summarize(ranks, ending, startFailure);
}

}  // namespace braid::tools
