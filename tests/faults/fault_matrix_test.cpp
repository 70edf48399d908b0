// The fault matrix (issue 10): random draws of (fault, ranks, transport, collective, size, delay, victim), each run
// as forked processes under a hard wall-clock kill. Every rank loops one collective on inputs whose results are
// known exactly; the victim injects its fault after the delay. Pass: nothing hangs, every survivor's every
// completed call was exact, and each survivor ends with the outcome the fault must give (PeerLost or Aborted naming
// the victim, within the fault's bound; a slow peer: every call completes). Never a wrong result.
//
//   BRAID_FAULT_RUNS=N      cases to draw (default 12: CI's sample); scripts/fault-matrix.sh runs 1,000 and reports
//   BRAID_FAULT_SEED=S      the first case's seed (default: from the clock, printed so a failure can be replayed)
//   BRAID_FAULT_REPORT=F    appends one JSON line per case to F (what scripts/fault-matrix.sh summarises)
//   BRAID_FAULT_SECONDS=T   draws no new case after T seconds (0: no limit)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/collective_cases.hpp"
#include "support/error_names.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Faults a rank can do to itself. SIGTERM's default action ends the process as SIGKILL does, but through the path a
// job scheduler takes; `leave` destroys the communicator and returns while the others still call collectives;
// `abort` calls Communicator::abort() from another thread; `slow` stops calling for longer than the heartbeat
// timeout and then goes on (slow is not dead: everyone must finish).
enum class Fault { kKill, kStop, kTerm, kExit, kLeave, kAbort, kSlow };
constexpr const char* kFaultNames[] = {"kill", "stop", "term", "exit", "leave", "abort", "slow"};
enum class Coll { kAllreduce, kAllgather, kBroadcast, kReduceScatter, kAlltoall };
constexpr const char* kCollNames[] = {"allreduce", "allgather", "broadcast", "reducescatter", "alltoall"};

struct Case {
  std::uint64_t seed = 0;
  Fault fault = Fault::kKill;
  int ranks = 2;
  std::string transport = "shm";
  Coll coll = Coll::kAllreduce;
  std::size_t count = 16;  // elements per rank (per block for allgather, reducescatter, alltoall)
  int delayMs = 0;
  int victim = 0;

  std::string describe() const {
    std::ostringstream s;
    s << "seed " << seed << ": " << kFaultNames[static_cast<int>(fault)] << " rank " << victim << " of " << ranks
      << " after " << delayMs << " ms, " << kCollNames[static_cast<int>(coll)] << " of " << count << " x int32 over "
      << transport;
    return s.str();
  }
};

Case draw(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  Case c;
  c.seed = seed;
  c.fault = static_cast<Fault>(pick(7));
  c.ranks = std::vector<int>{2, 3, 4, 8}[static_cast<std::size_t>(pick(4))];
  c.transport = pick(2) == 0 ? "shm" : "tcp";
  c.coll = static_cast<Coll>(pick(5));
  c.count = pick(2) == 0 ? 16 : (std::size_t{1} << 18) / static_cast<std::size_t>(c.ranks);  // ~1 MiB per call
  const int delay = pick(4);
  c.delayMs = delay == 0 ? 0 : delay == 1 ? 5 : delay == 2 ? 50 : pick(100);
  c.victim = pick(c.ranks);
  return c;
}

// Heartbeats fast enough for a test (0.2 s apart, 2 s of silence is a stopped peer); the call timeout far above
// every bound, so that an error must come from detection.
Settings matrixSettings(const std::string& transport) {
  Settings s = testSettings();
  s.transport = transport;
  s.heartbeatIntervalSeconds = 0.2;
  s.heartbeatTimeoutSeconds = 2;
  s.timeoutSeconds = 60;
  return s;
}

// Inputs: element j of rank r's contribution in call i is (r + 1) * ((i + j) % 5 + 1): small integers, so every
// result is exact and every call's differs from the last one's.
std::int32_t input(int rank, int call, std::size_t j) {
  return (rank + 1) * static_cast<std::int32_t>((static_cast<std::size_t>(call) + j) % 5 + 1);
}

/// One call of the case's collective, checked; throws braid::Error from the call, or a description of a wrong result.
void checkedCall(Communicator& comm, Coll coll, std::size_t count, int call) {
  const int n = comm.size();
  const int me = comm.rank();
  const auto un = static_cast<std::size_t>(n);
  std::vector<std::int32_t> in;
  std::vector<std::int32_t> out;
  auto wrong = [&](std::size_t at, std::int64_t want) {
    throw std::runtime_error(std::string("WRONG RESULT: ") + kCollNames[static_cast<int>(coll)] + " call " +
                             std::to_string(call) + " element " + std::to_string(at) + " is " +
                             std::to_string(out[at]) + ", expected " + std::to_string(want));
  };
  const std::int64_t rankSum = static_cast<std::int64_t>(n) * (n + 1) / 2;
  switch (coll) {
    case Coll::kAllreduce:
      in.resize(count);
      for (std::size_t j = 0; j < count; ++j) in[j] = input(me, call, j);
      out.assign(count, -1);
      comm.allreduce(in.data(), out.data(), count, DataType::kInt32, ReduceKind::kSum);
      for (std::size_t j = 0; j < count; ++j) {
        if (out[j] != rankSum * input(0, call, j)) wrong(j, rankSum * input(0, call, j));
      }
      return;
    case Coll::kAllgather:
      in.resize(count);
      for (std::size_t j = 0; j < count; ++j) in[j] = input(me, call, j);
      out.assign(count * un, -1);
      comm.allgather(in.data(), out.data(), count, DataType::kInt32);
      for (std::size_t j = 0; j < out.size(); ++j) {
        if (out[j] != input(static_cast<int>(j / count), call, j % count)) {
          wrong(j, input(static_cast<int>(j / count), call, j % count));
        }
      }
      return;
    case Coll::kBroadcast: {
      const int root = call % n;
      out.resize(count);
      for (std::size_t j = 0; j < count; ++j) out[j] = me == root ? input(root, call, j) : -1;
      comm.broadcast(out.data(), count, DataType::kInt32, root);
      for (std::size_t j = 0; j < count; ++j) {
        if (out[j] != input(root, call, j)) wrong(j, input(root, call, j));
      }
      return;
    }
    case Coll::kReduceScatter:
      in.resize(count * un);
      for (std::size_t j = 0; j < in.size(); ++j) in[j] = input(me, call, j);
      out.assign(count, -1);
      comm.reduceScatter(in.data(), out.data(), count, DataType::kInt32, ReduceKind::kSum);
      for (std::size_t j = 0; j < count; ++j) {
        const std::int64_t want = rankSum * input(0, call, static_cast<std::size_t>(me) * count + j);
        if (out[j] != want) wrong(j, want);
      }
      return;
    case Coll::kAlltoall:
      // Block p of rank r's input goes to rank p: element j of it is input(r, call, p * count + j).
      in.resize(count * un);
      for (std::size_t j = 0; j < in.size(); ++j) in[j] = input(me, call, j);
      out.assign(count * un, -1);
      comm.alltoall(in.data(), out.data(), count, DataType::kInt32);
      for (std::size_t j = 0; j < out.size(); ++j) {
        const int from = static_cast<int>(j / count);
        const std::int32_t want = input(from, call, static_cast<std::size_t>(me) * count + j % count);
        if (out[j] != want) wrong(j, want);
      }
      return;
  }
}

// How long after the fault a survivor may take to end with an error: a dead process closes its sockets and its
// pidfd fires (5 s bound, as the PeerFailure tests); a stopped one only goes silent (heartbeat timeout + 1 s, plus
// scheduling on a busy 2-core machine); an abort reaches every rank within 2 s.
double boundSeconds(Fault f) { return f == Fault::kStop ? 4 : f == Fault::kAbort ? 2.5 : 5; }

void appendLine(const std::string& path, const std::string& line) {
  if (path.empty()) return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  const std::string withNewline = line + "\n";
  [[maybe_unused]] const ssize_t n = ::write(fd, withNewline.data(), withNewline.size());  // one write: whole lines
  ::close(fd);
}

/// The victim's pid, which it wrote to the outcomes file before anything else ("pid N"): a stopped victim must be
/// killed by the survivors once they have their error, or the run would wait for the wall-clock kill.
pid_t victimPid(const std::string& outcomes) {
  std::ifstream lines(outcomes);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("pid ", 0) == 0) return static_cast<pid_t>(std::atol(line.c_str() + 4));
  }
  return 0;
}

/// A rank's part of one case; returns normally when its outcome is what the fault must give.
void rankBody(Communicator& comm, const Case& c, const std::string& outcomes) {
  const int me = comm.rank();
  const bool victim = me == c.victim;
  if (victim) appendLine(outcomes, "pid " + std::to_string(::getpid()));
  // The fault starts its clock once the victim finished a first call, which every rank entered: so every rank has
  // finished creating its communicator (a fault during creation is another test's subject).
  auto faultAt = Clock::time_point::max();
  std::thread injector;
  auto startInjector = [&] {
    faultAt = Clock::now() + std::chrono::milliseconds(c.delayMs);
    if (!victim || c.fault == Fault::kSlow || c.fault == Fault::kLeave) return;
    injector = std::thread([&comm, fault = c.fault, at = faultAt] {
      std::this_thread::sleep_until(at);
      switch (fault) {
        case Fault::kKill:
          ::kill(::getpid(), SIGKILL);
          break;
        case Fault::kTerm:
          ::kill(::getpid(), SIGTERM);
          break;
        case Fault::kStop:
          ::kill(::getpid(), SIGSTOP);
          break;
        case Fault::kExit:
          ::_exit(0);
        case Fault::kAbort:
          comm.abort();
          return;
        default:
          return;
      }
      for (;;) ::pause();  // the signal takes effect a moment later: stay here until it does
    });
  };
  // A slow peer makes a fixed number of calls with everyone; the others call until their error.
  const int calls = c.fault == Fault::kSlow ? 6 : 1'000'000;
  std::string outcome = "ok";
  try {
    checkedCall(comm, c.coll, c.count, 0);
    startInjector();
    const auto giveUp = faultAt + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(boundSeconds(c.fault) + 10));
    for (int i = 1; i < calls; ++i) {
      if (victim && c.fault == Fault::kSlow && i == 3) std::this_thread::sleep_until(faultAt + 2500ms);
      if (victim && c.fault == Fault::kLeave && Clock::now() >= faultAt) break;
      checkedCall(comm, c.coll, c.count, i);
      if (Clock::now() > giveUp) break;
    }
  } catch (const Error& e) {
    // An error before the fault's clock started (the victim died in the first call) counts from the call's end.
    const double afterFault =
        faultAt == Clock::time_point::max() ? 0 : std::chrono::duration<double>(Clock::now() - faultAt).count();
    outcome = std::string(errorCodeName(e.code()));
    if (injector.joinable()) injector.join();
    if (!victim && c.fault == Fault::kStop) {
      if (const pid_t pid = victimPid(outcomes); pid > 0) ::kill(pid, SIGKILL);
    }
    appendLine(outcomes, "rank " + std::to_string(me) + " " + outcome + " peer " + std::to_string(e.context().peer) +
                             " " + std::to_string(afterFault));
    // A dead, stopped or departed victim is PeerLost. An aborting one tells its peers, who read PeerLost ("peer 3
    // aborted its communicator"); over TCP its failed call's notice also passes its Aborted on, to ranks that had
    // no operation with it in flight ("rank 3 failed allreduce #7 (...): the communicator was aborted on this rank").
    const bool expected = c.fault == Fault::kAbort
                              ? (e.code() == ErrorCode::kAborted || e.code() == ErrorCode::kPeerLost)
                              : e.code() == ErrorCode::kPeerLost;
    require(c.fault != Fault::kSlow, std::string("a slow peer is not a dead one, but: ") + e.what());
    require(expected, std::string("unexpected error: ") + e.what());
    if (!victim) {
      // Every survivor names the victim: as the peer it lost, or in a notice passed on by a rank that lost it
      // ("rank 1 failed allreduce #7 (...): connection to peer 3 ... closed"), whose blamed peer the error takes.
      require(namesRank(e, c.victim),
              "the error does not name the victim, rank " + std::to_string(c.victim) + ": " + e.what());
    }
    require(afterFault < boundSeconds(c.fault),
            "the error came " + std::to_string(afterFault) + " s after the fault: " + e.what());
    return;
  }
  if (injector.joinable()) injector.join();
  appendLine(outcomes, "rank " + std::to_string(me) + " " + outcome + " 0");
  if (victim || c.fault == Fault::kSlow) return;
  throw std::runtime_error("collectives went on without an error after the fault");
}

std::uint64_t envNumber(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out;
}

TEST(FaultMatrix, RandomCasesNeverHangOrLie) {
  const std::uint64_t runs = envNumber("BRAID_FAULT_RUNS", 12);
  const std::uint64_t first = envNumber(
      "BRAID_FAULT_SEED", static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()));
  const char* reportEnv = std::getenv("BRAID_FAULT_REPORT");
  const std::string report = reportEnv != nullptr ? reportEnv : "";
  std::printf("fault matrix: %llu cases from seed %llu (BRAID_FAULT_SEED replays them)\n",
              static_cast<unsigned long long>(runs), static_cast<unsigned long long>(first));
  // BRAID_FAULT_SECONDS: stop drawing once this long has passed (a time-boxed run keeps the cases it finished).
  const auto budget = std::chrono::seconds(envNumber("BRAID_FAULT_SECONDS", 0));
  const auto began = std::chrono::steady_clock::now();
  for (std::uint64_t k = 0; k < runs; ++k) {
    if (budget.count() > 0 && std::chrono::steady_clock::now() - began > budget) break;
    const Case c = draw(first + k);
    char outcomes[] = "/tmp/braid-fault-XXXXXX";
    const int fd = ::mkstemp(outcomes);
    ASSERT_GE(fd, 0);
    ::close(fd);
    const auto start = Clock::now();
    // The hard wall-clock kill: far above every bound, so reaching it means a hang.
    const auto results = runProcessesWith(
        c.ranks, matrixSettings(c.transport), [&](Communicator& comm) { rankBody(comm, c, outcomes); }, 60);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::string failed;
    for (int r = 0; r < c.ranks; ++r) {
      // The victim's own fate is the fault's; only a wrong result from it counts.
      const bool wrongResult = results[static_cast<std::size_t>(r)].find("WRONG RESULT") != std::string::npos;
      if (!results[static_cast<std::size_t>(r)].empty() && (r != c.victim || wrongResult)) {
        failed += "rank " + std::to_string(r) + ": " + results[static_cast<std::size_t>(r)] + "; ";
      }
    }
    std::ifstream lines(outcomes);
    std::string detail;
    double slowest = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("rank ", 0) != 0) continue;
      detail += (detail.empty() ? "" : ", ") + line;
      const auto space = line.rfind(' ');
      if (space != std::string::npos) slowest = std::max(slowest, std::atof(line.c_str() + space + 1));
    }
    ::unlink(outcomes);
    EXPECT_EQ(failed, "") << c.describe() << " (outcomes: " << detail << ")";
    std::ostringstream json;
    json << "{\"seed\": " << c.seed << ", \"fault\": \"" << kFaultNames[static_cast<int>(c.fault)]
         << "\", \"ranks\": " << c.ranks << ", \"transport\": \"" << c.transport << "\", \"collective\": \""
         << kCollNames[static_cast<int>(c.coll)] << "\", \"count\": " << c.count << ", \"delay_ms\": " << c.delayMs
         << ", \"victim\": " << c.victim << ", \"passed\": " << (failed.empty() ? "true" : "false")
         << ", \"slowest_detection_s\": " << slowest << ", \"seconds\": " << seconds << ", \"failure\": \""
         << jsonEscape(failed) << "\"}";
    appendLine(report, json.str());
  }
}

}  // namespace
}  // namespace braid::testing
