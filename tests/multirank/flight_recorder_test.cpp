// The flight recorder and traces: a communicator's last calls as JSON on demand and in a file when a
// failure breaks it (BRAID_FLIGHT_RECORDER) or a signal asks (BRAID_FLIGHT_RECORDER_SIGNAL), and every call as a
// Chrome trace (BRAID_TRACE).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "support/collective_cases.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

// A fresh directory, removed with everything in it at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/braid-record-XXXXXX";
    path = ::mkdtemp(name) != nullptr ? name : "";
    if (path.empty()) throw std::runtime_error("mkdtemp failed");
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// The last calls on demand, and a file per rank when a failure breaks the communicator (here rank 0's third
// allreduce, which rank 1 never makes: rank 1 has returned, so rank 0 loses it).
TEST(FlightRecorder, RecordsCallsAndWritesThemWhenAFailureBreaksTheCommunicator) {
  const TempDir dir;
  const std::string prefix = dir.path + "/record";
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
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Where the peers were: rank 2 finishes three allreduces and then stays away (alive, beating, in no call) while ranks
// 0 and 1 wait for it in the fourth. Their timeouts and their records, written then, must say that peer 2 last began
// call 2 and is out of it, over shared memory (read from its region) and TCP (its heartbeats say so).
class FlightRecorderPeers : public ::testing::TestWithParam<std::string> {};

TEST_P(FlightRecorderPeers, TheRecordSaysWhereEachPeerWasWhenACallTimedOut) {
  const TempDir dir;
  const std::string prefix = dir.path + "/peers";
  Settings s = testSettings();
  s.transport = GetParam();
  s.timeoutSeconds = 2;
  s.heartbeatIntervalSeconds = 0.2;
  s.flightRecorder = prefix;
  const auto body = [&](Communicator& comm) {
    float x[32] = {};
    for (int i = 0; i < 3; ++i) comm.allreduce(x, x, 32, DataType::kFloat32, ReduceKind::kSum);
    if (comm.rank() == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3500));  // past the others' timeout, then it leaves
      return;
    }
    bool timedOut = false;
    try {
      comm.allreduce(x, x, 32, DataType::kFloat32, ReduceKind::kSum);
    } catch (const Error& e) {
      timedOut = e.code() == ErrorCode::kTimeout;
      require(timedOut, std::string("expected a timeout, got ") + e.what());
      // The error itself says where the peer it waited for was.
      require(std::string(e.what()).find("peer 2 is 1 collective behind: it last began #2 and has finished it") !=
                  std::string::npos,
              std::string("the timeout should say where peer 2 was: ") + e.what());
    }
    require(timedOut, "the allreduce rank 2 stayed away from should have timed out");
    const std::string file = readFile(prefix + ".rank" + std::to_string(comm.rank()) + ".json");
    require(file.find("{\"rank\": 2, \"last_seq\": 2, \"in_call\": false, \"age_s\": ") != std::string::npos,
            "the record should say peer 2 last began call 2 and left it: " + file);
    require(file.find("\"seq\": 3, \"op\": \"allreduce\"") != std::string::npos, "this rank's call 3: " + file);
  };
  EXPECT_EQ(failures(runProcessesWith(3, s, body, 60)), "");
}

INSTANTIATE_TEST_SUITE_P(Transports, FlightRecorderPeers, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

// BRAID_FLIGHT_RECORDER_SIGNAL=USR1: `kill -USR1` on a rank's process writes its record while the communicator
// goes on (ranks as processes: each sends the signal to itself, as a user would from outside).
TEST(FlightRecorder, WrittenOnTheSignalWhileTheCommunicatorGoesOn) {
  const TempDir dir;
  const std::string prefix = dir.path + "/signal";
  Settings s = testSettings();
  s.flightRecorder = prefix;
  s.flightRecorderSignal = "USR1";
  const auto body = [&](Communicator& comm) {
    float x[16] = {};
    for (int i = 0; i < 3; ++i) comm.allreduce(x, x, 16, DataType::kFloat32, ReduceKind::kSum);
    const std::string path = prefix + ".rank" + std::to_string(comm.rank()) + ".json";
    ::kill(::getpid(), SIGUSR1);
    std::string file;
    for (int wait = 0; wait < 500 && file.find("\"seq\": 2") == std::string::npos; ++wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      file = readFile(path);
    }
    require(file.find("\"seq\": 2, \"op\": \"allreduce\"") != std::string::npos, "the record on SIGUSR1: " + file);
    int one = 1;
    comm.allreduce(&one, &one, 1, DataType::kInt32, ReduceKind::kSum);
    require(one == comm.size(), "the allreduce after the dump");
  };
  EXPECT_EQ(failures(runProcessesWith(2, s, body, 60)), "");
}

// The signal without a place to write to is refused by name, as is a signal braid does not take.
TEST(FlightRecorder, ASignalWithoutAPrefixOrAnUnknownSignalIsRefused) {
  Settings noPrefix = testSettings();
  noPrefix.flightRecorderSignal = "USR2";
  const auto refused = runThreads(
      2, [](Communicator&) {}, noPrefix);
  EXPECT_NE(failures(refused).find("BRAID_FLIGHT_RECORDER_SIGNAL needs BRAID_FLIGHT_RECORDER"), std::string::npos)
      << failures(refused);
  Settings unknown = testSettings();
  unknown.flightRecorder = "/tmp/unused";
  unknown.flightRecorderSignal = "INT";
  const auto refusedToo = runThreads(
      2, [](Communicator&) {}, unknown);
  EXPECT_NE(failures(refusedToo).find("expected USR1 or USR2"), std::string::npos) << failures(refusedToo);
}

// BRAID_TRACE: every communicator writes its calls as a Chrome trace when destroyed, a file per rank.
TEST(FlightRecorder, TheTraceHasEveryCallOfEveryRank) {
  const TempDir dir;
  Settings s = testSettings();
  s.trace = dir.path + "/t";
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
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
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
}

}  // namespace
}  // namespace braid::testing
