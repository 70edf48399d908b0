#include "bench/peers.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <stdexcept>
#include <thread>

#include "bench/bench_json.hpp"
#include "bench/machine_info.hpp"
#include "braid/knobs.hpp"
#include "run/launcher.hpp"
#include "run/rank_setup.hpp"

extern char** environ;

namespace braid::tools {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A sweep of 8 B .. 1 GiB through Gloo over loopback TCP takes minutes; a peer that hangs (a lost rank inside its
// own timeouts, a stuck mpirun) must still hand control back to braid bench.
constexpr std::chrono::minutes kPeerLimit{20};
// How long a killed driver gets to leave on SIGTERM (mpirun takes its ranks down) before SIGKILL.
constexpr std::chrono::seconds kTermGrace{5};
constexpr int kTailLines = 12;

struct Peer {
  const char* name;
  const char* driver;
  const char* package;  // what builds the driver on Debian
};

constexpr Peer kPeers[] = {
    {"gloo", "braid-bench-gloo", "libgloo-dev"},
    {"mpi", "braid-bench-mpi", "libopenmpi-dev and openmpi-bin"},
};

[[noreturn]] void failPeer(const std::string& peer, const std::string& why) {
  throw std::runtime_error("peer " + peer + ": " + why);
}

// A fresh directory for one run's store, logs and rows; removed with everything in it.
class TempDir {
 public:
  explicit TempDir(const std::string& peer) {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/braid-bench-" + peer + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      failPeer(peer, "cannot create a temporary directory " + pattern + ": " + std::strerror(errno));
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string findOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t colon = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, colon - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  return {};
}

// The driver's flags for `o`, spelled as bench/driver_args.cpp parses them.
std::vector<std::string> driverFlags(const BenchOptions& o, const std::string& json) {
  std::vector<std::string> f = {"--collective", o.collective,
                                "-b",           std::to_string(o.minBytes),
                                "-e",           std::to_string(o.maxBytes),
                                "-f",           std::to_string(o.factor),
                                "-n",           std::to_string(o.iterations),
                                "-w",           std::to_string(o.warmup),
                                "--reps",       std::to_string(o.repetitions),
                                "-c",           o.check ? "1" : "0",
                                "-o",           o.op,
                                "-d",           o.dtype,
                                "-r",           std::to_string(o.root),
                                "--json",       json};
  if (o.inplace) f.push_back("--inplace");
  if (o.minLoopMs > 0) f.insert(f.end(), {"--min-loop-ms", std::to_string(o.minLoopMs)});
  return f;
}

// The parent's environment less the names set here, plus `extra` ("NAME=value").
std::vector<std::string> childEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& x : extra) replaced = replaced || x.substr(0, x.find('=')) == name;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (auto& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// fork/exec of argv with env, stdout and stderr to `log`, stdin from /dev/null. Everything the child touches is
// made before fork: between fork and exec only async-signal-safe calls, as the parent may have threads.
pid_t spawn(const std::string& peer, std::vector<std::string> argv, std::vector<std::string> env,
            const std::string& log, const std::vector<int>& cpus = {}) {
  cpu_set_t pin;
  CPU_ZERO(&pin);
  for (int cpu : cpus) CPU_SET(cpu, &pin);
  std::vector<char*> args = pointers(argv);
  std::vector<char*> envp = pointers(env);
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) failPeer(peer, "cannot create " + log + ": " + std::strerror(errno));
  const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // A driver must not outlive braid bench (killed, or interrupted): it would hold ports and CPUs.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    if (!cpus.empty() && ::sched_setaffinity(0, sizeof pin, &pin) != 0) {
      const char* msg = "braid bench: cannot pin the peer's rank to its CPUs (--bind)\n";
      (void)!::write(out, msg, std::strlen(msg));
      ::_exit(127);
    }
    if (in >= 0) ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::execve(args[0], args.data(), envp.data());
    const char* msg = "braid bench: cannot execute the peer's driver: ";
    (void)!::write(STDERR_FILENO, msg, std::strlen(msg));
    (void)!::write(STDERR_FILENO, args[0], std::strlen(args[0]));
    ::_exit(127);
  }
  const int forkErrno = errno;
  ::close(out);
  if (in >= 0) ::close(in);
  if (pid < 0) failPeer(peer, std::string("cannot fork: ") + std::strerror(forkErrno));
  return pid;
}

std::string statusText(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  return "status " + std::to_string(status);
}

// What a failed driver said: its own error lines ("braid-bench-...: ...") when it wrote any, which mpirun's
// boilerplate would otherwise push out of the tail, else the last lines of its output.
std::string logTail(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines, own;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line.rfind("braid-bench-", 0) == 0 || line.rfind("braid bench:", 0) == 0) own.push_back(line);
    lines.push_back(line);
  }
  const std::vector<std::string>& pick = own.empty() ? lines : own;
  if (pick.empty()) return "(it wrote nothing)";
  std::string text;
  const std::size_t first = pick.size() > kTailLines ? pick.size() - kTailLines : 0;
  for (std::size_t i = first; i < pick.size(); ++i) text += "\n    " + pick[i];
  return text;
}

bool logMentions(const std::string& path, std::initializer_list<const char*> needles) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    for (const char* n : needles) {
      if (line.find(n) != std::string::npos) return true;
    }
  }
  return false;
}

struct Child {
  pid_t pid = -1;
  std::string what;  // "rank 1 of braid-bench-gloo", "mpirun"
  std::string log;
  bool done = false;
};

void stopAll(std::vector<Child>& children) {
  for (auto& c : children) {
    if (!c.done) ::kill(c.pid, SIGTERM);
  }
  const auto until = Clock::now() + kTermGrace;
  for (auto& c : children) {
    while (!c.done) {
      int status = 0;
      const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
      if (r == c.pid || (r < 0 && errno != EINTR)) {
        c.done = true;
      } else if (Clock::now() >= until) {
        ::kill(c.pid, SIGKILL);
        ::waitpid(c.pid, &status, 0);
        c.done = true;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
}

// Waits for every child within kPeerLimit. The first one to fail takes the others down (they would otherwise
// wait for it until their own timeouts) and is what the error names.
void waitAll(const std::string& peer, std::vector<Child>& children) {
  const auto deadline = Clock::now() + kPeerLimit;
  std::size_t left = children.size();
  while (left > 0) {
    for (auto& c : children) {
      if (c.done) continue;
      int status = 0;
      const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) continue;
      c.done = true;
      --left;
      if (r < 0) {
        stopAll(children);
        failPeer(peer, "lost track of " + c.what + ": " + std::strerror(errno));
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        stopAll(children);
        std::string why = c.what + " failed with " + statusText(status) + ":" + logTail(c.log);
        if (peer == "mpi" && logMentions(c.log, {"single_copy", "process_vm_", "CMA"})) {
          why +=
              "\n    (in a container where Open MPI's shared-memory single copy fails, try "
              "OMPI_MCA_btl_vader_single_copy_mechanism=none)";
        }
        failPeer(peer, why);
      }
    }
    if (left == 0) break;
    if (Clock::now() >= deadline) {
      stopAll(children);
      failPeer(peer, "did not finish within " + std::to_string(kPeerLimit.count()) + " minutes; stopped it. " +
                         "Last lines of " + children.front().what + ":" + logTail(children.front().log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

std::string peerDriverDir() {
  if (const char* dir = std::getenv("BRAID_BENCH_DIR"); dir && *dir) return dir;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

namespace {

// braid forced onto its TCP transport (BRAID_TRANSPORT=tcp): Open MPI then takes its TCP path too, and auto floats all.
bool braidOverTcp() {
  const char* transport = std::getenv("BRAID_TRANSPORT");
  return transport && std::string(transport) == "tcp";
}

// braid's ranks run helper threads unless BRAID_SHM_THREADS (as a communicator would take it: set, else from the tune
// file, else its default) is 1: a rank then needs CPUs of its own for them, not the one a core binding gives it.
bool braidHelpers() { return knobValue("BRAID_SHM_THREADS") != "1"; }

}  // namespace

// auto binds the libraries whose ranks spin on shared memory, braid and Open MPI: floating, two such ranks can land
// on one CPU and stay there, their calls then waiting on context switches, which bound ranks never did on a 16-core VM
// (docs/BENCHMARKS.md, "Floating ranks against bound ones"). A library with a thread beside each rank floats, since
// bound with it the two take turns on one CPU: Gloo (its progress thread; "Every library bound" there measured Gloo
// slowed so), and braid over TCP (BRAID_TRANSPORT=tcp: its mesh's progress thread), where Open MPI floats as well, so
// that both compare as before. Where the ranks outnumber the CPUs, binding would only fix which ranks share, so every
// library floats. Where each rank could have two CPUs or more and braid runs helper threads (BRAID_SHM_THREADS, auto by
// default), braid's ranks, and Open MPI's alike, get a block each: the CPUs divided among the ranks. With one CPU a
// rank a block is a core binding.
std::string resolveBind(const std::string& library, const std::string& bind, int ranks) {
  if (bind != "auto") return bind;
  if (library == "gloo" || braidOverTcp()) return "none";
  const int cpus = usableCores();
  if (ranks > cpus) return "none";
  return braidHelpers() && 2 * ranks <= cpus ? "block" : "core";
}

PeerRun runPeer(const std::string& peer, const BenchOptions& options, int ranks) {
  const Peer* info = nullptr;
  for (const auto& p : kPeers) {
    if (peer == p.name) info = &p;
  }
  if (info == nullptr) failPeer(peer, "unknown peer '" + peer + "' (braid bench compares with gloo and mpi)");
  if (ranks < 1) failPeer(peer, "needs at least one rank, asked for " + std::to_string(ranks));
  if (options.mem != "host") {
    failPeer(peer, "its driver measures host buffers only, not --mem " + options.mem);
  }
  const std::string dir = peerDriverDir();
  const std::string driver = dir + "/" + info->driver;
  if (::access(driver.c_str(), X_OK) != 0) {
    failPeer(peer, std::string(info->driver) + " is not in " + dir +
                       (std::getenv("BRAID_BENCH_DIR") ? " ($BRAID_BENCH_DIR)" : "") +
                       ": braid was built without it; install Debian's " + info->package +
                       " and rebuild braid (cmake finds it)");
  }

  const std::string bind = resolveBind(peer, options.bind, ranks);
  TempDir tmp(peer);
  const std::string json = tmp.path() + "/rows.json";
  const std::vector<std::string> flags = driverFlags(options, json);
  std::vector<Child> children;
  try {
    if (peer == "gloo") {
      const std::string store = tmp.path() + "/store";
      fs::create_directory(store);
      // Placed by the launcher's plan for `bind` (its warnings were printed for braid's run; under auto Gloo floats).
      LaunchSpec placement;
      placement.ranks = ranks;
      placement.bind = bind;
      placement.errFd = -1;
      const std::vector<std::vector<int>> cpus = planBinding(placement);
      for (int r = 0; r < ranks; ++r) {
        std::vector<std::string> argv = {driver};
        argv.insert(argv.end(), flags.begin(), flags.end());
        Child c;
        c.what = "rank " + std::to_string(r) + " of " + info->driver;
        c.log = tmp.path() + "/rank" + std::to_string(r) + ".log";
        c.pid = spawn(peer, argv,
                      childEnvironment({"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(ranks),
                                        "BRAID_BENCH_STORE=" + store, "BRAID_BENCH_PREFIX=braid-bench"}),
                      c.log, cpus[static_cast<std::size_t>(r)]);
        children.push_back(c);
      }
    } else {
      const std::string mpirun = findOnPath("mpirun");
      if (mpirun.empty()) failPeer(peer, "mpirun is not on PATH: install Debian's openmpi-bin");
      // Shared memory between local ranks (ob1 over vader), as Open MPI runs on one node, unless braid itself is
      // forced onto TCP (BRAID_TRANSPORT=tcp): then Open MPI's TCP btl, so both move bytes the same way. Ranks may
      // outnumber cores, and float or are bound like braid's own (--bind; overload-allowed: more ranks than cores
      // share them, as braid's do); root is allowed, as containers run as root.
      const bool overTcp = braidOverTcp();
      std::vector<std::string> argv = {mpirun,
                                       "-n",
                                       std::to_string(ranks),
                                       "--oversubscribe",
                                       "--bind-to",
                                       bind == "none"    ? "none"
                                       : bind == "block" ? "hwthread:overload-allowed"
                                                         : bind + ":overload-allowed",
                                       "--mca",
                                       "pml",
                                       "ob1",
                                       "--mca",
                                       "btl",
                                       overTcp ? "self,tcp" : "self,vader"};
      // block: a run of logical CPUs a rank, as many as braid's plan deals (mpirun's processing elements, counted in
      // hardware threads, which Open MPI numbers a core's side by side, as the plan orders them).
      const int each = std::max(1, usableCores() / std::max(ranks, 1));
      if (bind == "block") {
        argv.insert(argv.end(), {"--use-hwthread-cpus", "--map-by", "slot:PE=" + std::to_string(each)});
      }
      if (bind != "none" && bind != "block") argv.insert(argv.end(), {"--map-by", bind});
      if (::geteuid() == 0) argv.push_back("--allow-run-as-root");
      argv.push_back(driver);
      argv.insert(argv.end(), flags.begin(), flags.end());
      Child c;
      c.what = "mpirun of " + std::string(info->driver);
      c.log = tmp.path() + "/mpirun.log";
      c.pid = spawn(peer, argv, childEnvironment({}), c.log);
      children.push_back(c);
    }
    waitAll(peer, children);
  } catch (...) {
    stopAll(children);
    throw;
  }
  PeerRun run;
  run.bind = bind;
  try {
    run.rows = readResults(json);
    run.meta = readMeta(json);
  } catch (const std::exception& e) {
    failPeer(peer, std::string(info->driver) + " finished but left no rows: " + e.what() + ";" +
                       logTail(children.front().log));
  }
  return run;
}

PeerRun runDeviceSweep(const BenchOptions& options, int ranks, bool withNccl) {
  const std::string peer = withNccl ? "nccl" : "device";
  const std::string dir = peerDriverDir();
  const std::string driver = dir + "/braid-bench-device";
  if (::access(driver.c_str(), X_OK) != 0) {
    failPeer(peer, "braid-bench-device is not in " + dir + ": braid was built without CUDA (nvcc not found)");
  }
  TempDir tmp(peer);
  const std::string json = tmp.path() + "/rows.json";
  std::vector<std::string> argv = {driver};
  for (const auto& f : driverFlags(options, json)) argv.push_back(f);
  argv.insert(argv.end(), {"--impl", withNccl ? "braid,nccl" : "braid"});
  if (ranks > 0) argv.insert(argv.end(), {"--nranks", std::to_string(ranks)});
  std::vector<char*> args = pointers(argv);
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  if (pid < 0) failPeer(peer, std::string("cannot fork: ") + std::strerror(errno));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    failPeer(peer, "braid-bench-device ended with " + statusText(status));
  return {readResults(json), readMeta(json), "none"};  // one process per GPU, where the driver puts it
}

}  // namespace braid::tools
