// Making and destroying communicators, and many operations in flight, leave nothing behind: file
// descriptors, threads, shared-memory mappings and resident memory come back to where they were.
#include <dirent.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "support/collective_cases.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

int entries(const char* dir) {
  DIR* d = ::opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

struct Usage {
  int fds = 0;
  int threads = 0;
  int shmMappings = 0;  // lines of /proc/self/maps backed by /dev/shm
  long rssKb = 0;

  static Usage now() {
    Usage u;
    u.fds = entries("/proc/self/fd") - 1;  // less the one opendir holds
    u.threads = entries("/proc/self/task");
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) u.shmMappings += line.find("/dev/shm/") != std::string::npos;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("VmRSS:", 0) == 0) u.rssKb = std::stol(line.substr(6));
    }
    return u;
  }
  std::string text() const {
    return std::to_string(fds) + " fds, " + std::to_string(threads) + " threads, " + std::to_string(shmMappings) +
           " shm mappings, " + std::to_string(rssKb) + " KiB resident";
  }
};

// `rounds` communicators split from `comm`, each used once and destroyed; one round first, so that what is made
// once per process (OpenSSL's state, caches) exists before the baseline.
void churn(Communicator& comm, int rounds) {
  auto once = [&] {
    auto sub = comm.split(0, comm.rank());
    int x = 1;
    sub->allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum);
    require(x == comm.size(), "allreduce in a split communicator gave " + std::to_string(x));
  };
  once();
  comm.barrier();
  const Usage before = Usage::now();
  for (int i = 0; i < rounds; ++i) once();
  comm.barrier();
  const Usage after = Usage::now();
  const std::string both =
      " (before: " + before.text() + "; after " + std::to_string(rounds) + ": " + after.text() + ")";
  require(after.fds == before.fds, "file descriptors leaked" + both);
  require(after.threads == before.threads, "threads leaked" + both);
  require(after.shmMappings == before.shmMappings, "shared-memory mappings leaked" + both);
  // Allocators keep some freed memory; a leak of even 16 KiB per communicator would show as 16 MiB.
  require(after.rssKb - before.rssKb < 16 * 1024, "resident memory grew" + both);
}

TEST(Resources, AThousandCommunicatorsOverSharedMemoryLeaveNothing) {
  EXPECT_EQ(failures(runProcesses(
                2, [](Communicator& comm) { churn(comm, 1000); }, 300, "shm")),
            "");
}

TEST(Resources, CommunicatorsOverTcpLeaveNothing) {
  EXPECT_EQ(failures(runProcesses(
                2, [](Communicator& comm) { churn(comm, 200); }, 300, "tcp")),
            "");
}

// 64 operations in flight at once on one communicator, each on its own buffer: all exact, and nothing left over
// once they are done.
TEST(Resources, SixtyFourOperationsInFlightLeaveNothing) {
  const auto body = [](Communicator& comm) {
    constexpr int kOps = 64;
    constexpr std::size_t kCount = 16 * 1024;
    auto round = [&] {
      std::vector<std::vector<float>> bufs(kOps, std::vector<float>(kCount));
      std::vector<Work> works;
      for (int i = 0; i < kOps; ++i) {
        for (std::size_t j = 0; j < kCount; ++j) bufs[i][j] = static_cast<float>((comm.rank() + 1) * (i + 1));
        works.push_back(
            comm.allreduceAsync(bufs[i].data(), bufs[i].data(), kCount, DataType::kFloat32, ReduceKind::kSum));
      }
      for (Work& w : works) w.wait();
      const float ranks = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
      for (int i = 0; i < kOps; ++i) {
        for (std::size_t j = 0; j < kCount; j += 997) {
          require(bufs[i][j] == ranks * static_cast<float>(i + 1),
                  "operation " + std::to_string(i) + " element " + std::to_string(j));
        }
      }
    };
    round();
    const Usage before = Usage::now();
    for (int r = 0; r < 20; ++r) round();
    const Usage after = Usage::now();
    require(after.fds == before.fds && after.threads == before.threads,
            "operations in flight left something: before " + before.text() + ", after " + after.text());
    require(after.rssKb - before.rssKb < 16 * 1024, "resident memory grew: " + before.text() + " -> " + after.text());
  };
  EXPECT_EQ(failures(runProcesses(2, body, 300, "shm")), "");
  EXPECT_EQ(failures(runProcesses(2, body, 300, "tcp")), "");
}

}  // namespace
}  // namespace braid::testing
