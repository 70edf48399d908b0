// Faults while communicators are being created (issue 10): the rank that serves the rendezvous store (rank 0 under
// BRAID_ROOT_ADDR) is killed before, during or after the others reach it, over shared memory and TCP. Pass: no hang
// and no crash; every other rank either gets its communicator (the root died after the creation finished, then its
// first collective fails with PeerLost) or an Error naming the root, Timeout or PeerLost, within BRAID_TIMEOUT + 3 s.
// Also allocation failure during creation: one rank creates its communicator out of memory (RLIMIT_AS just above
// what it maps already) or out of file descriptors (RLIMIT_NOFILE at its lowest free fd number). It must get a
// braid::Error (not a crash, not another exception) saying what ran out, and every other rank an Error within
// BRAID_TIMEOUT + 3 s that names it wherever the library can know it (see othersNameTheVictim).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

#include "base/error.hpp"
#include "braid/braid.hpp"
#include "support/error_names.hpp"
#include "support/free_port.hpp"
#include "support/rank_runner.hpp"
#include "transport/tcp/socket.hpp"

namespace braid::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTimeoutSeconds = 4;  // BRAID_TIMEOUT here: how long a rank waits for a root that never answers

using Param = std::tuple<std::string, int>;  // transport, when the root dies (ms after it starts creating)

class RootDeath : public ::testing::TestWithParam<Param> {};

TEST_P(RootDeath, DuringCreationIsAnErrorOnEveryOtherRankNotAHang) {
  const auto [transport, killAfterMs] = GetParam();
  const int size = 4;
  const std::string root = "127.0.0.1:" + std::to_string(freePort());
  const auto results = forkRanks(
      size,
      [&, transport = transport, killAfterMs = killAfterMs](int rank) -> std::string {
        actAsLaunchedRank(rank, size, root, transport, kTimeoutSeconds);
        ::setenv("BRAID_HEARTBEAT_INTERVAL", "0.2", 1);
        ::setenv("BRAID_HEARTBEAT_TIMEOUT", "2", 1);
        if (rank == 0) {
          std::thread([killAfterMs] {
            std::this_thread::sleep_for(std::chrono::milliseconds(killAfterMs));
            ::kill(::getpid(), SIGKILL);
          }).detach();
        } else {
          // The others come a little later, so that some kill times fall before they connect and some after.
          std::this_thread::sleep_for(std::chrono::milliseconds(20 * rank));
        }
        const auto start = Clock::now();
        auto within = [&](const std::string& what) -> std::string {
          const double took = std::chrono::duration<double>(Clock::now() - start).count();
          if (took > kTimeoutSeconds + 3) return what + " after " + std::to_string(took) + " s: too late";
          return "";
        };
        try {
          auto comm = Communicator::fromEnvironment();
          // The creation finished before the root died: the root's death shows in the first collectives.
          std::int32_t v = 1;
          const auto giveUp = start + std::chrono::seconds(kTimeoutSeconds + 3);
          while (Clock::now() < giveUp) comm->allreduce(&v, &v, 1, DataType::kInt32, ReduceKind::kSum);
          return "collectives went on with a dead root";
        } catch (const Error& e) {
          std::printf("[%s, root killed after %d ms] rank %d after %.3f s (peer %d): %s\n", transport.c_str(),
                      killAfterMs, rank, std::chrono::duration<double>(Clock::now() - start).count(), e.context().peer,
                      e.what());
          std::fflush(stdout);
          // A root that never answered (dead before it listened: the connection is refused until BRAID_TIMEOUT) is
          // Timeout; one that hung up (its store's connections or, once the communicator was made, its process
          // seen to end) is PeerLost. Both name it: by the address it serves the store at, or as peer 0.
          if (e.code() != ErrorCode::kTimeout && e.code() != ErrorCode::kPeerLost) {
            return std::string("expected Timeout (the root never answered) or PeerLost (it hung up): ") + e.what();
          }
          const bool named = std::string(e.what()).find(root) != std::string::npos || namesRank(e, 0);
          if (!named) return std::string("the error does not name the root or rank 0: ") + e.what();
          return within(e.what());
        }
      },
      kTimeoutSeconds + 20);
  for (int r = 1; r < size; ++r) EXPECT_EQ(results[static_cast<std::size_t>(r)], "") << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Faults, RootDeath,
                         ::testing::Combine(::testing::Values("shm", "tcp"), ::testing::Values(0, 30, 60, 200)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_after_" + std::to_string(std::get<1>(info.param)) + "ms";
                         });

// Bytes this process maps now (VmSize), 0 when unknown.
std::size_t mappedBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;  // "VmSize:  123456 kB"
  }
  return 0;
}

// The lowest fd number not in use: with RLIMIT_NOFILE at it, every number below is taken and the next socket,
// eventfd or shm segment fails with EMFILE.
int lowestFreeFd() {
  const int fd = ::dup(0);
  if (fd >= 0) ::close(fd);
  return fd;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The rank out of `resource` gets the system's refusal as a braid::Error: Internal for a call that failed with
// ENOMEM or EMFILE ("mmap of shared memory ...: Cannot allocate memory", "socket: Too many open files"),
// Unavailable for a thread or an allocation refused ("could not start the TCP mesh's progress thread: Resource
// temporarily unavailable (the process is out of threads or memory; ...)", "out of memory"). Either says what ran
// out. "" when it does.
std::string victimSaysWhatRanOut(const Error& e, const std::string& resource) {
  if (e.code() != ErrorCode::kInternal && e.code() != ErrorCode::kUnavailable) {
    return std::string("expected Internal or Unavailable from the rank out of ") + resource + ": " + e.what();
  }
  const std::string& m = e.message();
  const bool says = resource == "memory" ? contains(m, "Cannot allocate memory") || contains(m, "out of memory") ||
                                               contains(m, "out of threads or memory")
                                         : contains(m, "Too many open files");
  return says ? "" : "the error does not say the rank ran out of " + resource + ": " + e.what();
}

// The others wait for rank 1, and rank 0 serves the store they meet at; each ends in one of these ways:
// - Timeout or PeerLost naming rank 1: as the peer, or by the store key it never set ("allGather('host'): rank 1
//   never contributed", "connection to peer 1 ... closed");
// - Internal from opening rank 1's shared-memory segment, named for its rank ("shm_open(/braid-TAG-1) of a peer's
//   segment: No such file or directory"), which rank 1 removed as it failed;
// - when rank 0 failed first (on rank 1's missing segment, or at the store's barrier) and left: PeerLost naming the
//   store it served (its address: "get('shm/info/1') at the store at 127.0.0.1:PORT: ... Connection reset by
//   peer"), or Internal from opening rank 0's segment, which it removed as it failed ("shm_open(/braid-TAG-0) ...");
// - Timeout from a store barrier, whose counter knows how many ranks arrived but not which ("barrier('shm/attached')
//   timed out: 1 of 3 ranks arrived"): it cannot name any.
// "" when the error is one of them.
std::string othersNameTheVictim(const Error& e, const std::string& store) {
  const std::string& m = e.message();
  static const std::regex rankOnesKey("get\\('[^']*/1'\\)");  // allGather's keys are PREFIX/RANK
  const bool named = namesRank(e, 1) || std::regex_search(m, rankOnesKey);
  if ((e.code() == ErrorCode::kTimeout || e.code() == ErrorCode::kPeerLost) && named) return "";
  if (e.code() == ErrorCode::kPeerLost && contains(m, "store at " + store)) return "";
  if (e.code() == ErrorCode::kInternal &&
      (contains(m, "-1) of a peer's segment") || contains(m, "-0) of a peer's segment"))) {
    return "";
  }
  if (e.code() == ErrorCode::kTimeout && m.starts_with("barrier('") && contains(m, " ranks arrived")) return "";
  return std::string("expected Timeout or PeerLost naming rank 1, PeerLost naming the store, Internal opening rank ") +
         "1's or rank 0's segment, or a store barrier's Timeout: " + e.what();
}

using ResourceParam = std::tuple<std::string, std::string>;  // transport, "memory" or "fds"

class ResourceExhaustion : public ::testing::TestWithParam<ResourceParam> {};

TEST_P(ResourceExhaustion, DuringCreationIsAnErrorOnEveryRank) {
  const auto [transport, resource] = GetParam();
  const int size = 3;
  const std::string root = "127.0.0.1:" + std::to_string(freePort());
  const auto results = forkRanks(
      size,
      [&, transport = transport, resource = resource](int rank) -> std::string {
        actAsLaunchedRank(rank, size, root, transport, kTimeoutSeconds);
        ::setenv("BRAID_HEARTBEAT_INTERVAL", "0.2", 1);
        ::setenv("BRAID_HEARTBEAT_TIMEOUT", "2", 1);
        const bool victim = rank == 1;
        if (victim) {
          rlimit lim{};
          if (resource == "memory") {
            lim.rlim_cur = lim.rlim_max = mappedBytes() + (2u << 20);
            if (::setrlimit(RLIMIT_AS, &lim) != 0) return "setrlimit(RLIMIT_AS) failed";
          } else {
            const int free = lowestFreeFd();
            if (free < 0) return "dup failed";
            lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(free);
            if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) return "setrlimit(RLIMIT_NOFILE) failed";
          }
        }
        const auto start = Clock::now();
        try {
          auto comm = Communicator::fromEnvironment();
          std::int32_t v = 1;
          const auto giveUp = start + std::chrono::seconds(kTimeoutSeconds + 3);
          while (Clock::now() < giveUp) comm->allreduce(&v, &v, 1, DataType::kInt32, ReduceKind::kSum);
          return victim ? "the rank out of " + resource + " made its communicator and ran collectives"
                        : "collectives went on without rank 1";
        } catch (const Error& e) {
          const double took = std::chrono::duration<double>(Clock::now() - start).count();
          std::printf("[%s, %s] rank %d after %.3f s (peer %d): %s\n", transport.c_str(), resource.c_str(), rank, took,
                      e.context().peer, e.what());
          std::fflush(stdout);
          if (took > kTimeoutSeconds + 3) return std::string(e.what()) + " after " + std::to_string(took) + " s";
          return victim ? victimSaysWhatRanOut(e, resource) : othersNameTheVictim(e, root);
        } catch (const std::exception& e) {
          return std::string("not a braid::Error: ") + e.what();
        }
      },
      kTimeoutSeconds + 20);
  for (int r = 0; r < size; ++r) EXPECT_EQ(results[static_cast<std::size_t>(r)], "") << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Faults, ResourceExhaustion,
                         ::testing::Combine(::testing::Values("shm", "tcp"), ::testing::Values("memory", "fds")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

}  // namespace
}  // namespace braid::testing
