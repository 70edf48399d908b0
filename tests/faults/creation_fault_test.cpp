// Faults while communicators are being created (issue 10): the rank that serves the rendezvous store (rank 0 under
// BRAID_ROOT_ADDR) is killed before, during or after the others reach it, over shared memory and TCP. Pass: no hang
// and no crash; every other rank either gets its communicator (the root died after the creation finished, then its
// first collective fails with PeerLost) or an Error naming the root, within BRAID_TIMEOUT + 3 s.
// Also allocation failure during creation: one rank creates its communicator out of memory (RLIMIT_AS just above
// what it maps already) or out of file descriptors (RLIMIT_NOFILE at its lowest free fd number). It must get a
// braid::Error (not a crash, not another exception), and every other rank an Error within BRAID_TIMEOUT + 3 s.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "base/error.hpp"
#include "braid/braid.hpp"
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
          const bool named = std::string(e.what()).find(root) != std::string::npos || e.context().peer == 0 ||
                             std::string(e.what()).find("peer 0") != std::string::npos ||
                             std::string(e.what()).find("rank 0") != std::string::npos;
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
          std::printf("[%s, %s] rank %d after %.3f s: %s\n", transport.c_str(), resource.c_str(), rank, took, e.what());
          std::fflush(stdout);
          if (took > kTimeoutSeconds + 3) return std::string(e.what()) + " after " + std::to_string(took) + " s";
          return "";
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
