// braid bench: the sweep measures and verifies every collective, and the command's output is what it promises.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/bench_options.hpp"
#include "bench/bench_sweep.hpp"
#include "support/collective_cases.hpp"
#include "support/free_port.hpp"
#include "support/rank_runner.hpp"

namespace braid::tools {
namespace {

TEST(BenchSweep, EveryCollectiveVerifiesOverThreeRanks) {
  for (const std::string& coll : benchCollectives()) {
    for (bool inplace : {false, true}) {
      if (inplace && coll == "sendrecv") continue;
      BenchOptions o;
      o.minBytes = 8;
      o.maxBytes = 96 << 10;
      o.factor = 8;
      o.iterations = 2;
      o.warmup = 1;
      o.inplace = inplace;
      o.root = 1;
      auto results = testing::runThreads(3, [&](Communicator& comm) {
        const auto rows = runSweep(comm, coll, o, nullptr);
        testing::require(!rows.empty(), coll + ": no rows");
        for (const auto& r : rows) {
          testing::require(r.wrong == 0,
                           coll + ": " + std::to_string(r.wrong) + " wrong at " + std::to_string(r.bytes));
          testing::require(r.timeUs > 0 && r.busbwGBs > 0, coll + ": no time");
          testing::require(r.ranks == 3 && r.impl == "braid", coll + ": row fields");
        }
      });
      EXPECT_EQ(testing::failures(results), "") << coll << (inplace ? " in place" : "");
    }
  }
}

TEST(BenchSweep, ReduceOpsAndTypesVerify) {
  for (const char* op : {"sum", "prod", "min", "max", "avg"}) {
    for (const char* dtype : {"float", "half", "bfloat16", "double", "int32", "uint8"}) {
      BenchOptions o;
      o.minBytes = 64;
      o.maxBytes = 64 << 10;
      o.factor = 32;
      o.iterations = 1;
      o.warmup = 0;
      o.op = op;
      o.dtype = dtype;
      auto results = testing::runThreads(2, [&](Communicator& comm) {
        for (const char* coll : {"allreduce", "reducescatter", "reduce"}) {
          for (const auto& r : runSweep(comm, coll, o, nullptr)) {
            testing::require(r.wrong == 0, std::string(coll) + " " + op + " " + dtype + ": wrong elements");
          }
        }
      });
      EXPECT_EQ(testing::failures(results), "") << op << " " << dtype;
    }
  }
}

TEST(BenchOptions, SizesAndBusFactors) {
  BenchOptions o;
  o.minBytes = 8;
  o.maxBytes = 64;
  EXPECT_EQ(sweepSizes(o, 4), (std::vector<std::size_t>{8, 16, 32, 64}));
  EXPECT_EQ(sweepSizes(o, 12), (std::vector<std::size_t>{12, 24, 60}));  // whole elements per rank; none empty
  EXPECT_DOUBLE_EQ(busFactor("allreduce", 4), 1.5);
  EXPECT_DOUBLE_EQ(busFactor("allgather", 4), 0.75);
  EXPECT_DOUBLE_EQ(busFactor("broadcast", 4), 1.0);
}

std::string braidBinary() {
  const char* dir = std::getenv("BRAID_BENCH_DIR");
  return dir ? std::string(dir) + "/braid" : "";
}

int runShell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

TEST(BenchCommand, WritesTheTableAndJsonItPromises) {
  const std::string braid = braidBinary();
  if (braid.empty() || std::system(("test -x " + braid).c_str()) != 0) GTEST_SKIP() << "braid not built";
  const std::string out = ::testing::TempDir() + "bench_out.txt", json = ::testing::TempDir() + "bench.json";
  ASSERT_EQ(runShell(braid + " bench allgather -b 64 -e 4K -f 8 -n 2 -w 1 --nranks 2 --json " + json + " >" + out), 0);
  std::ifstream table(out);
  const std::string text((std::istreambuf_iterator<char>(table)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("busbw(GB/s)"), std::string::npos) << text;
  EXPECT_NE(text.find("machine:"), std::string::npos) << text;
  const auto doc = nlohmann::json::parse(std::ifstream(json));
  for (const char* key : {"command", "machine", "date", "commit", "version"}) EXPECT_TRUE(doc["meta"].contains(key));
  ASSERT_EQ(doc["results"].size(), 3u);  // 64, 512, 4096 bytes
  for (const auto& row : doc["results"]) {
    EXPECT_EQ(row["impl"], "braid");
    EXPECT_EQ(row["collective"], "allgather");
    EXPECT_EQ(row["ranks"], 2);
    EXPECT_EQ(row["wrong"], 0);
    for (const char* key : {"dtype", "redop", "bytes", "count", "mem", "time_us", "algbw_gbs", "busbw_gbs"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
  }
}

// Under torchrun's variables (here a job of one rank), braid bench joins the job instead of starting ranks of its own.
TEST(BenchCommand, JoinsTheJobOfATorchrunStyleLauncher) {
  const std::string braid = braidBinary();
  if (braid.empty() || std::system(("test -x " + braid).c_str()) != 0) GTEST_SKIP() << "braid not built";
  const std::string out = ::testing::TempDir() + "bench_torchrun.txt";
  const int port = testing::freePort();  // a pid-derived port once collided with a port in use in CI
  ASSERT_EQ(runShell("env -u BRAID_RANK -u BRAID_WORLD_SIZE -u BRAID_ROOT_ADDR RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 "
                     "LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                     std::to_string(port) + " " + braid + " bench allreduce -b 8 -e 64 -f 8 -n 2 -w 1 --nranks 3 >" +
                     out + " 2>&1"),
            0);
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("1 ranks"), std::string::npos) << text;  // the launcher's one rank, not --nranks 3
}

TEST(BenchCommand, BadArgumentsAreNamedAndFail) {
  const std::string braid = braidBinary();
  if (braid.empty() || std::system(("test -x " + braid).c_str()) != 0) GTEST_SKIP() << "braid not built";
  const std::string err = ::testing::TempDir() + "bench_err.txt";
  EXPECT_NE(runShell(braid + " bench nosuch 2>" + err), 0);
  EXPECT_NE(runShell(braid + " bench -b 1K -e 8 2>>" + err), 0);
  EXPECT_NE(runShell(braid + " bench -b 8 -e 8 --compare nccl-ish 2>>" + err), 0);
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("unknown collective 'nosuch'"), std::string::npos) << text;
  EXPECT_NE(text.find("larger than -e"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown peer 'nccl-ish'"), std::string::npos) << text;
}

}  // namespace
}  // namespace braid::tools
