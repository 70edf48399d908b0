// The local launcher: forks the ranks, relays their output line by line, and stops the job when one rank fails.
#include "run/launcher.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>

#include "base/error.hpp"

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
// A line is held back until its newline so lines of different ranks never interleave; past 1 MiB it is written as
// it is, so that a rank printing without newlines cannot grow the launcher's memory without bound.
constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;
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

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// pipe2 with close-on-exec on both ends, so no rank inherits another rank's pipes.
bool makePipe(Fd& readEnd, Fd& writeEnd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  readEnd = Fd(fds[0]);
  writeEnd = Fd(fds[1]);
  return true;
}

// Writes all of data; false once fd is unusable (closed reader, bad fd), after which the caller drops its output.
bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, kPollMs);
    } else if (n < 0 && errno != EINTR) {
      return false;
    }
  }
  return true;
}

// Relays one rank's stdout or stderr: whole lines, each prefixed "[rank] ", each written in one piece.
class LineRelay {
 public:
  LineRelay(int rank, int dest) : prefix_("[" + std::to_string(rank) + "] "), dest_(dest) {}

  void feed(std::string_view data) {
    const std::size_t lastNewline = data.rfind('\n');
    pending_.append(data);
    if (lastNewline == std::string_view::npos) {
      if (pending_.size() >= kMaxLineBytes) flush();
      return;
    }
    const std::size_t end = pending_.size() - (data.size() - lastNewline - 1);  // one past the last newline
    std::string out;
    out.reserve(end + prefix_.size() * 8);
    for (std::size_t start = 0; start < end;) {
      const std::size_t newline = pending_.find('\n', start);
      out += prefix_;
      out.append(pending_, start, newline + 1 - start);
      start = newline + 1;
    }
    pending_.erase(0, end);
    emit(out);
    if (pending_.size() >= kMaxLineBytes) flush();
  }

  // Writes a partial line with a newline of its own, so the next line of another rank starts on a line.
  void flush() {
    if (pending_.empty()) return;
    std::string out = prefix_;
    out += pending_;
    out += '\n';
    pending_.clear();
    emit(out);
  }

 private:
  void emit(std::string_view text) {
    if (dest_ >= 0 && !writeAll(dest_, text)) dest_ = -1;
  }

  std::string prefix_;
  int dest_;
  std::string pending_;
};

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

// Like execvp's search: a name with a slash is used as is, otherwise the first executable in PATH. Returns 0 or
// the errno exec would give (ENOENT when nothing matches, EACCES when a match is not executable).
int resolveProgram(const std::string& name, std::string& path) {
  auto check = [](const std::string& candidate) {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0) return errno;
    if (!S_ISREG(st.st_mode)) return EACCES;
    return ::access(candidate.c_str(), X_OK) == 0 ? 0 : errno;
  };
  if (name.empty()) return ENOENT;
  if (name.find('/') != std::string::npos) {
    path = name;
    return check(name);
  }
  const char* env = std::getenv("PATH");
  const std::string dirs = env ? env : "/bin:/usr/bin";
  int result = ENOENT;
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    const std::string dir = colon == start ? "." : dirs.substr(start, colon - start);
    const std::string candidate = dir + "/" + name;
    const int err = check(candidate);
    if (err == 0) {
      path = candidate;
      return 0;
    }
    if (err == EACCES) result = EACCES;
    start = colon + 1;
  }
  return result;
}

// Two distinct free ports: both sockets stay bound until both numbers are known.
std::pair<int, int> pickTwoFreePorts() {
  Fd sockets[2];
  int ports[2];
  for (int i = 0; i < 2; ++i) {
    sockets[i] = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (sockets[i].get() < 0) failErrno("socket (picking a free port)", errno);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);  // free on every address, as a store binding all of them needs
    addr.sin_port = 0;
    if (::bind(sockets[i].get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      failErrno("bind to port 0 (picking a free port)", errno);
    }
    socklen_t len = sizeof addr;
    if (::getsockname(sockets[i].get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      failErrno("getsockname (picking a free port)", errno);
    }
    ports[i] = ntohs(addr.sin_port);
  }
  return {ports[0], ports[1]};
}

std::string freshToken() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) fail(ErrorCode::kInternal, {}, "RAND_bytes failed to make BRAID_TOKEN");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

std::vector<std::string> rankEnvironment(const LaunchSpec& spec, int rank, int masterPort, int rootPort,
                                         const std::string& token) {
  std::vector<std::pair<std::string, std::string>> vars = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(spec.ranks)},
      {"LOCAL_RANK", std::to_string(rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(spec.ranks)},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", std::to_string(masterPort)},
      {"BRAID_RANK", std::to_string(rank)},
      {"BRAID_WORLD_SIZE", std::to_string(spec.ranks)},
      {"BRAID_LOCAL_RANK", std::to_string(rank)},
      // torchrun's store owns MASTER_PORT, so braid's rank 0 listens on another port.
      {"BRAID_ROOT_ADDR", "127.0.0.1:" + std::to_string(rootPort)},
      {"BRAID_TOKEN", token},
  };
  for (const auto& [name, value] : spec.extraEnv) {
    auto it = std::find_if(vars.begin(), vars.end(), [&](const auto& var) { return var.first == name; });
    if (it != vars.end()) {
      it->second = value;
    } else {
      vars.emplace_back(name, value);
    }
  }
  std::vector<std::string> env;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    if (std::none_of(vars.begin(), vars.end(), [&](const auto& var) { return var.first == name; })) {
      env.emplace_back(text);
    }
  }
  for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
  return env;
}

std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) failErrno("sched_getaffinity", errno);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// The CPUs of each NUMA node that has some this process may use, in node order; empty without NUMA information.
std::vector<std::vector<int>> numaNodeCpus(const std::vector<int>& allowed) {
  std::vector<std::pair<int, std::vector<int>>> nodes;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= 4 || name.compare(0, 4, "node") != 0 ||
        !std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    std::ifstream file(entry.path() / "cpulist");
    std::string text;
    if (!std::getline(file, text)) continue;
    std::vector<int> cpus;
    for (int cpu : parseCpuList(text)) {
      if (std::binary_search(allowed.begin(), allowed.end(), cpu)) cpus.push_back(cpu);
    }
    if (!cpus.empty()) nodes.emplace_back(std::stoi(name.substr(4)), std::move(cpus));
  }
  std::sort(nodes.begin(), nodes.end());
  std::vector<std::vector<int>> result;
  for (auto& node : nodes) result.push_back(std::move(node.second));
  return result;
}

// Per rank, the CPUs to pin it to (empty: leave it unpinned). Warnings go to errFd.
std::vector<std::vector<int>> planBinding(const LaunchSpec& spec) {
  std::vector<std::vector<int>> plan(spec.ranks);
  if (spec.bind == "none") return plan;
  const std::vector<int> allowed = allowedCpus();
  if (spec.bind == "core") {
    if (static_cast<std::size_t>(spec.ranks) > allowed.size()) {
      writeAll(spec.errFd, strCat("braid: --bind core: ", spec.ranks, " ranks share ", allowed.size(),
                                  " CPUs, so some ranks share a CPU\n"));
    }
    for (int r = 0; r < spec.ranks; ++r) plan[r] = {allowed[r % allowed.size()]};
    return plan;
  }
  const auto nodes = numaNodeCpus(allowed);
  if (nodes.empty()) {
    writeAll(spec.errFd, "braid: --bind numa: no NUMA information in /sys/devices/system/node; ranks are not bound\n");
    return plan;
  }
  for (int r = 0; r < spec.ranks; ++r) plan[r] = nodes[r % nodes.size()];
  return plan;
}

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
  if (spec.bind != "none" && spec.bind != "core" && spec.bind != "numa") {
    fail(ErrorCode::kInvalidArgument, {}, "launch: bind='", spec.bind, "' is not none, core or numa");
  }
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

std::vector<int> parseCpuList(const std::string& text) {
  auto malformed = [&text](std::string_view item) {
    fail(ErrorCode::kInvalidArgument, {}, "cpulist '", text, "' is malformed at '", item, "'");
  };
  auto number = [&](std::string_view digits, std::string_view item) {
    int value = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) malformed(item);
    return value;
  };
  std::string_view rest(text);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
  std::vector<int> cpus;
  while (!rest.empty()) {
    const std::size_t comma = std::min(rest.find(','), rest.size());
    const std::string_view item = rest.substr(0, comma);
    const std::size_t dash = item.find('-');
    const int first = number(item.substr(0, dash), item);
    const int last = dash == std::string_view::npos ? first : number(item.substr(dash + 1), item);
    if (last < first) malformed(item);
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    rest.remove_prefix(std::min(comma + 1, rest.size()));
  }
  return cpus;
}

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
