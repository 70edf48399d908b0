// Issue 10: making and destroying communicators, and many operations in flight, leave nothing behind: file
// descriptors, threads, shared-memory mappings and resident memory come back to where they were.
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
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

namespace braid::testing {
namespace {

// The flight recorder (issue 10): the last calls on demand, and a file per rank when a failure breaks the
// communicator (here rank 0's third allreduce, which rank 1 never makes, times out).
TEST(FlightRecorder, RecordsCallsAndWritesThemWhenAFailureBreaksTheCommunicator) {
  char dir[] = "/tmp/braid-flight-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string prefix = std::string(dir) + "/record";
  Settings s = testSettings();
  s.timeoutSeconds = 2;
  s.flightRecorder = prefix;
  const auto body = [&](Communicator& comm) {
    float x[64] = {};
    for (int i = 0; i < 2; ++i) comm.allreduce(x, x, 64, DataType::kFloat32, ReduceKind::kSum);
    const std::string record = comm.flightRecord();
    require(
        record.find("\"seq\": 1, \"op\": \"allreduce\", \"type\": \"float32\", \"count\": 64") != std::string::npos &&
            record.find("\"state\": \"done\"") != std::string::npos,
        "the record after two allreduces: " + record);
    comm.barrier();
    if (comm.rank() == 1) return;
    bool failed = false;
    try {
      comm.allreduce(x, x, 64, DataType::kFloat32, ReduceKind::kSum);
    } catch (const Error&) {
      failed = true;
    }
    require(failed, "the lone allreduce should have failed");
    std::ifstream in(prefix + ".rank0.json");
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    require(file.find("\"seq\": 3, \"op\": \"allreduce\"") != std::string::npos &&
                file.find("\"state\": \"failed\"") != std::string::npos,
            "the record written on failure: " + file);
  };
  EXPECT_EQ(failures(runProcessesWith(2, s, body, 60)), "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace braid::testing

namespace braid::testing {
namespace {

// BRAID_TRACE: every communicator writes its calls as a Chrome trace when destroyed, a file per rank.
TEST(FlightRecorder, TheTraceHasEveryCallOfEveryRank) {
  char dir[] = "/tmp/braid-trace-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  Settings s = testSettings();
  s.trace = std::string(dir) + "/t";
  const auto results = runThreads(
      2,
      [](Communicator& comm) {
        float x[256] = {};
        for (int i = 0; i < 3; ++i) comm.allreduce(x, x, 256, DataType::kFloat32, ReduceKind::kSum);
        comm.barrier();
      },
      s);
  EXPECT_EQ(failures(results), "");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string name = entry.path().filename().string();
    const int rank = name.rfind("t.rank0.", 0) == 0 ? 0 : 1;
    EXPECT_NE(text.find("\"name\": \"braid rank " + std::to_string(rank) + "\""), std::string::npos) << text;
    for (int seq = 0; seq < 3; ++seq) {
      EXPECT_NE(text.find("{\"name\": \"allreduce #" + std::to_string(seq) + "\", \"cat\": \"braid\", \"ph\": \"X\""),
                std::string::npos)
          << text;
    }
    EXPECT_NE(text.find("\"name\": \"barrier #3\""), std::string::npos) << text;
    EXPECT_NE(text.find("\"type\": \"float32\", \"count\": 256, \"state\": \"done\""), std::string::npos) << text;
  }
  EXPECT_EQ(files, 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace braid::testing
