// core::FlightRecorder: a ring of a communicator's last calls, as JSON.
#include "core/flight_recorder.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <regex>
#include <thread>

#include "base/error.hpp"

namespace braid::core {
namespace {

int occurrences(const std::string& text, const std::string& part) {
  int n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(FlightRecorder, KeepsTheLastCallsOldestFirstWithTheirStates) {
  FlightRecorder r(4);
  for (int i = 0; i < 5; ++i) {
    const auto id = r.began("allreduce", i, {DataType::kFloat32, 1024u + i, ReduceKind::kMax, -1});
    if (i < 4) r.ended(id, nullptr);
  }
  // The queue's calls come after those that started, numbered as they will be.
  const std::string json = r.json(3, 8, {}, {{"allreduce", 5, {DataType::kFloat32, 1029u, ReduceKind::kMax, -1}, 0}});
  EXPECT_EQ(json.rfind("{\"rank\": 3, \"size\": 8, \"peers\": [], \"calls\": [", 0), 0u) << json;
  EXPECT_EQ(occurrences(json, "\"op\": \"allreduce\""), 5) << json;  // the ring holds the last four started
  EXPECT_EQ(json.find("\"seq\": 0,"), std::string::npos) << json;
  EXPECT_LT(json.find("\"seq\": 1,"), json.find("\"seq\": 4,")) << json;  // oldest first
  EXPECT_LT(json.find("\"seq\": 4,"), json.find("\"seq\": 5,")) << json;
  EXPECT_EQ(occurrences(json, "\"state\": \"done\""), 3) << json;
  EXPECT_NE(json.find("\"id\": 5, \"seq\": 4, \"op\": \"allreduce\", \"type\": \"float32\", \"count\": 1028, "
                      "\"reduce\": \"max\", \"root\": -1, \"state\": \"running\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"id\": 6, \"seq\": 5, \"op\": \"allreduce\", \"type\": \"float32\", \"count\": 1029, "
                      "\"reduce\": \"max\", \"root\": -1, \"state\": \"queued\", \"issued_us\": 0.0, "
                      "\"started_us\": -1.0"),
            std::string::npos)
      << json;
}

TEST(FlightRecorder, RoundsItsCapacityUpToAPowerOfTwo) {
  FlightRecorder r(3);
  for (int i = 0; i < 9; ++i) r.ended(r.began("broadcast", i, {}), nullptr);
  const std::string json = r.json(0, 2);
  EXPECT_EQ(occurrences(json, "\"op\": \"broadcast\""), 4) << json;
  EXPECT_EQ(json.find("\"seq\": 4,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"seq\": 5,"), std::string::npos) << json;
}

// The thread running calls writes without a lock: a reader on another thread gets each call whole or not at all.
TEST(FlightRecorder, AReaderRacingTheWriterSeesWholeCalls) {
  FlightRecorder r(64);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::int64_t i = 0; i < 200000; ++i) {
      const auto id =
          r.began("allgather", i, {DataType::kInt32, static_cast<std::size_t>(2 * i + 1), ReduceKind::kSum, -1});
      if (i % 1000 == 7) {
        const Error e(ErrorCode::kTimeout, strCat("call ", i, " failed"));
        r.ended(id, &e);
      } else {
        r.ended(id, nullptr);
      }
    }
    done = true;
  });
  const std::regex call(
      R"re("seq": (\d+), "op": "allgather", "type": "int32", "count": (\d+)[^}]*?("error": "call (\d+) failed")?\})re");
  // Until the writer is done and some call was read: on a loaded machine the writer may start after the first dump
  // and finish before the second.
  int calls = 0;
  while (!done || calls == 0) {
    const std::string json = r.json(0, 1);
    for (auto it = std::sregex_iterator(json.begin(), json.end(), call); it != std::sregex_iterator(); ++it) {
      const long long seq = std::stoll((*it)[1]);
      ++calls;
      ASSERT_EQ(std::stoll((*it)[2]), 2 * seq + 1) << it->str();
      if ((*it)[4].matched) {
        ASSERT_EQ(std::stoll((*it)[4]), seq) << it->str();
      }
    }
  }
  writer.join();
  EXPECT_GT(calls, 0);
}

TEST(FlightRecorder, AFailureKeepsItsErrorEscaped) {
  FlightRecorder r(8);
  const auto id = r.began("barrier", 7, {});
  const Error e(ErrorCode::kTimeout, "no \"answer\" from rank 2\nafter 1 s");
  r.ended(id, &e);
  const std::string json = r.json(0, 3);
  EXPECT_NE(json.find("\"state\": \"failed\""), std::string::npos) << json;
  EXPECT_NE(json.find("no \\\"answer\\\" from rank 2\\u000aafter 1 s"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"count\""), std::string::npos) << json;  // a barrier moves nothing
}

// Where the peers were, as the engine knows it: the last collective each began, whether it is still in it, and how
// old the news is.
TEST(FlightRecorder, NamesWhereEachPeerWas) {
  FlightRecorder r(8);
  const std::vector<transport::PeerProgress> peers = {{1, {41, true}, 0.0}, {2, {40, false}, 1.25}, {3, {}, -1}};
  const std::string json = r.json(0, 4, peers);
  EXPECT_NE(json.find("{\"rank\": 1, \"last_seq\": 41, \"in_call\": true, \"age_s\": 0.000}"), std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"rank\": 2, \"last_seq\": 40, \"in_call\": false, \"age_s\": 1.250}"), std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"rank\": 3, \"last_seq\": -1, \"in_call\": false, \"age_s\": -1.000}"), std::string::npos)
      << json;
}

// One word holds both halves, and a region's zeroed word reads as "nothing begun".
TEST(Progress, RoundTripsThroughItsWord) {
  using transport::Progress;
  EXPECT_EQ(Progress::fromWord(0), Progress{});
  for (const Progress p : {Progress{0, true}, Progress{0, false}, Progress{123456789012, true}, Progress{-1, false},
                           Progress{7, false, true}, Progress{-1, false, true}}) {
    EXPECT_EQ(Progress::fromWord(p.word()), p) << p.seq << " " << p.running << " " << p.behindPointToPoint;
  }
}

}  // namespace
}  // namespace braid::core
