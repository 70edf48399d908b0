// The job rendezvous from launcher environments: ranks as threads, each with its own environment, start and reach
// rank 0's store over loopback. PMIx failing is checked in a child process (PMIx keeps process-wide state).
#include "bootstrap/launch_rendezvous.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <thread>

#include "base/error.hpp"
#include "support/env_lookup.hpp"
#include "support/free_port.hpp"
#include "transport/tcp/socket.hpp"

namespace braid::bootstrap {
namespace {

using testing::freePort;
using testing::lookupOf;
using testing::Vars;

// Every rank (a thread with vars(rank) as its environment) joins, then they all-gather their ranks over the store.
std::vector<std::string> rendezvousAll(int size, const std::function<Vars(int)>& vars) {
  std::mutex mutex;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  // Kept until every thread is done: rank 0's server must outlive the others' last request.
  std::vector<JobRendezvous> jobs(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        const Vars env = vars(r);
        Settings settings = Settings::fromEnvironment(lookupOf(env));
        settings.timeoutSeconds = 20;
        JobRendezvous& job = jobs[static_cast<std::size_t>(r)];
        job = rendezvousFromEnvironment(settings, lookupOf(env), [] { return std::string(); });
        EXPECT_EQ(job.identity.rank, r);
        EXPECT_EQ(job.server != nullptr, r == 0);
        const auto all = allGather(*job.client, "ranks", r, size, std::to_string(r), Deadline::after(20));
        for (int i = 0; i < size; ++i) EXPECT_EQ(all[i], std::to_string(i));
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        errors.push_back(strCat("rank ", r, ": ", e.what()));
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

TEST(LaunchRendezvous, TorchrunRanksMeetOnMasterPortPlusOne) {
  const std::uint16_t port = freePort();
  const auto errors = rendezvousAll(3, [&](int r) {
    return Vars{{"RANK", std::to_string(r)},
                {"WORLD_SIZE", "3"},
                {"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", std::to_string(port - 1)}};
  });
  EXPECT_TRUE(errors.empty()) << ::testing::PrintToString(errors);
}

TEST(LaunchRendezvous, SlurmRanksMeetOnFirstHostAtBraidPort) {
  const std::uint16_t port = freePort();
  const auto errors = rendezvousAll(3, [&](int r) {
    return Vars{{"SLURM_PROCID", std::to_string(r)},
                {"SLURM_NTASKS", "3"},
                {"SLURM_STEP_NODELIST", "127.0.0.1,127.0.0.2"},
                {"SLURM_JOB_ID", "9"},
                {"BRAID_PORT", std::to_string(port)}};
  });
  EXPECT_TRUE(errors.empty()) << ::testing::PrintToString(errors);
}

TEST(LaunchRendezvous, WrongDerivedTokenIsRefused) {
  // Two Slurm jobs on one port: a rank of job 10 must not join job 9's store.
  const std::uint16_t port = freePort();
  const Vars job9 = {{"SLURM_PROCID", "0"},
                     {"SLURM_NTASKS", "2"},
                     {"SLURM_STEP_NODELIST", "127.0.0.1"},
                     {"BRAID_PORT", std::to_string(port)},
                     {"SLURM_JOB_ID", "9"}};
  Vars job10 = job9;
  job10["SLURM_PROCID"] = "1";
  job10["SLURM_JOB_ID"] = "10";
  Settings settings = Settings::fromEnvironment(lookupOf(job9));
  settings.timeoutSeconds = 10;
  JobRendezvous root = rendezvousFromEnvironment(settings, lookupOf(job9));
  try {
    rendezvousFromEnvironment(settings, lookupOf(job10));
    FAIL() << "a rank of another job joined";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rejected the job token"), std::string::npos) << e.what();
  }
}

TEST(LaunchRendezvous, PmixFailureIsAnErrorNotAnExit) {
  // PMIx variables but no PMIx server behind them: PMIx_Init must fail into a braid::Error, in a child because a
  // failed PMIx_Init may leave process-wide state behind.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string message = "no error";
    try {
      const Vars env = {{"OMPI_COMM_WORLD_RANK", "1"},
                        {"OMPI_COMM_WORLD_SIZE", "2"},
                        {"PMIX_RANK", "1"},
                        {"PMIX_NAMESPACE", "nowhere"}};
      Settings settings = Settings::fromEnvironment(lookupOf(env));
      settings.timeoutSeconds = 5;
      rendezvousFromEnvironment(settings, lookupOf(env), [] { return std::string(); });
    } catch (const Error& e) {
      message = strCat(errorCodeName(e.code()), ": ", e.message());
    } catch (const std::exception& e) {
      message = strCat("not a braid::Error: ", e.what());
    }
    [[maybe_unused]] const ssize_t n = ::write(fds[1], message.data(), message.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string message;
  char buffer[512];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) message.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  if (message.find("cannot load libpmix") != std::string::npos) GTEST_SKIP() << message;
  EXPECT_EQ(message.rfind("Unavailable: PMIx_Init failed", 0), 0u) << message;
}

}  // namespace
}  // namespace braid::bootstrap
