// The test harness's process runner: every rank's outcome reaches the test, and a rank that never ran fails.
#include "support/rank_runner.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

namespace braid::testing {
namespace {

TEST(ForkRanks, ReportsEachRanksOutcome) {
  const auto results = forkRanks(
      3,
      [](int rank) -> std::string {
        if (rank == 1) return "rank one failed";
        if (rank == 2) ::raise(SIGKILL);
        return "";
      },
      60);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0], "");
  EXPECT_EQ(results[1], "rank one failed");
  EXPECT_NE(results[2].find("killed by signal 9"), std::string::npos) << results[2];
  EXPECT_EQ(failures(results), "rank 1: rank one failed\nrank 2: " + results[2] + "\n");
}

// A fork that fails leaves no child to report: that rank fails naming itself and errno, and the ranks already
// started, which would wait for it, are stopped rather than left to run.
TEST(ForkRanks, AFailedForkFailsTheRunNamingRankAndErrno) {
  int forks = 0;
  const auto results = forkRanksWith(
      3,
      [](int) {
        std::this_thread::sleep_for(std::chrono::seconds(60));  // a rank waiting for its missing peer
        return std::string();
      },
      120,
      [&forks]() -> pid_t {
        if (++forks == 2) {
          errno = EAGAIN;
          return -1;
        }
        return ::fork();
      });
  ASSERT_EQ(results.size(), 3u);
  const std::string cause =
      std::string("rank 1: fork failed: ") + std::strerror(EAGAIN) + " (errno " + std::to_string(EAGAIN) + ")";
  EXPECT_EQ(results[1], cause);
  EXPECT_NE(results[0].find(cause), std::string::npos) << results[0];  // started, then stopped
  EXPECT_NE(results[0].find("killed by signal 9"), std::string::npos) << results[0];
  EXPECT_NE(results[2].find(cause), std::string::npos) << results[2];  // never started
  EXPECT_EQ(forks, 2) << "forked on after a failed fork";
}

}  // namespace
}  // namespace braid::testing
