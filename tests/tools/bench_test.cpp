// braid bench: the sweep measures and verifies every collective, and the command's output is what it promises.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

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

// The checker itself: handed a correct result it counts 0, and with exactly one element altered exactly 1, for
// every collective, in place and out of place, on every rank that has a result.
TEST(BenchChecker, CountsExactlyTheOneWrongElement) {
  for (const std::string& coll : benchCollectives()) {
    for (bool inplace : {false, true}) {
      if (inplace && coll == "sendrecv") continue;
      BenchOptions o;
      o.inplace = inplace;
      o.root = 1;
      const std::size_t bytes = 3 * 4 * 16;  // whole float32 blocks for 3 ranks
      auto results = testing::runThreads(3, [&](Communicator& comm) {
        SweepBuffers b;
        b.send.assign(bytes + 64, std::byte{0});
        b.recv.assign(bytes + 64, std::byte{0});
        SweepCase c = sweepCase(comm, coll, o, bytes, b);
        c.fill();
        c.call();
        const std::string at = coll + (inplace ? " in place" : "") + " rank " + std::to_string(comm.rank());
        testing::require(c.check() == 0, at + ": a correct result counted " + std::to_string(c.check()));
        const bool hasResult = !((coll == "reduce" || coll == "gather") && comm.rank() != o.root);
        testing::require(c.result.empty() != hasResult, at + ": result span does not match the rank's role");
        if (c.result.empty()) return;
        const std::size_t elems = c.result.size() / c.elementBytes;
        c.result[(elems - 1) * c.elementBytes] ^= std::byte{0x40};
        testing::require(c.check() == 1, at + ": one altered element counted " + std::to_string(c.check()));
      });
      EXPECT_EQ(testing::failures(results), "") << coll << (inplace ? " in place" : "");
    }
  }
}

// corruptOne alters one element of one rank's result per row, and the ranks' counts add up to exactly 1 per row:
// over the store (thread ranks joined through TCP, as processes are) and without one (in-memory thread ranks).
TEST(BenchChecker, OneCorruptedElementCountsOncePerRow) {
  for (const bool overTcp : {true, false}) {
    for (const char* coll : {"allreduce", "gather", "sendrecv"}) {
      BenchOptions o;
      o.minBytes = 64;
      o.maxBytes = 4096;
      o.factor = 8;
      o.iterations = 1;
      o.warmup = 0;
      o.corruptOne = true;
      auto results = testing::runThreads(
          3,
          [&](Communicator& comm) {
            for (const auto& r : runSweep(comm, coll, o, nullptr)) {
              testing::require(r.wrong == 1, std::string(coll) + ": " + std::to_string(r.wrong) + " wrong at " +
                                                 std::to_string(r.bytes) + " bytes, not 1");
            }
          },
          overTcp ? testing::tcpSettings() : testing::testSettings());
      EXPECT_EQ(testing::failures(results), "") << coll << (overTcp ? " over TCP" : " in memory");
    }
  }
}

// The wrong counts are summed outside the communicator under test: checking a size adds to its sequence of
// collectives the checked call alone (one collective; none for sendrecv, whose calls are point-to-point), and
// sumWrongCounts adds nothing, so a broken collective cannot sum its own count.
TEST(BenchChecker, WrongCountsAreSummedOutsideTheCommunicator) {
  auto results = testing::runThreads(
      3,
      [&](Communicator& comm) {
        const std::int64_t before = comm.sequenceNumber();
        const long total = sumWrongCounts(comm, "allreduce", comm.rank() + 1);
        testing::require(total == 6, "sum of 1 + 2 + 3 came back as " + std::to_string(total));
        testing::require(comm.sequenceNumber() == before, "summing the counts made a collective call");
        for (const char* coll : {"allreduce", "allgather", "sendrecv"}) {
          BenchOptions o;
          o.minBytes = o.maxBytes = 96;
          o.iterations = 2;
          o.warmup = 1;
          std::int64_t calls[2];
          for (const bool checked : {false, true}) {
            o.check = checked;
            const std::int64_t start = comm.sequenceNumber();
            runSweep(comm, coll, o, nullptr);
            calls[checked] = comm.sequenceNumber() - start;
          }
          const std::int64_t checkedCall = std::string(coll) == "sendrecv" ? 0 : 1;
          testing::require(calls[1] - calls[0] == checkedCall, std::string(coll) + ": checking added " +
                                                                   std::to_string(calls[1] - calls[0]) +
                                                                   " collectives, not " + std::to_string(checkedCall));
        }
      },
      testing::tcpSettings());
  EXPECT_EQ(testing::failures(results), "");
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

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int runShell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// Runs `command` under torchrun's variables for a job of one rank on a free port. Tests run in parallel, and two
// of them can be handed the same free port: the runs then meet at one store and fail each other (exit 1), as two
// jobs given one MASTER_PORT would. Such a run is tried again on another port, up to three times; a run that fails
// three times fails the test. Returns the last exit status.
int runOnFreePort(const std::string& command) {
  int status = 1;
  for (int attempt = 0; attempt < 3 && status == 1; ++attempt) {
    status = runShell(
        "env -u BRAID_RANK -u BRAID_WORLD_SIZE -u BRAID_ROOT_ADDR RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 "
        "LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
        std::to_string(testing::freePort()) + " " + command);
  }
  return status;
}

TEST(BenchCommand, WritesTheTableAndJsonItPromises) {
  const std::string braid = braidBinary();
  if (braid.empty() || std::system(("test -x " + braid).c_str()) != 0) GTEST_SKIP() << "braid not built";
  const std::string out = ::testing::TempDir() + "bench_out.txt", json = ::testing::TempDir() + "bench.json";
  ASSERT_EQ(runShell(braid + " bench allgather -b 64 -e 4K -f 8 -n 2 -w 1 --nranks 2 --bind none --json " + json +
                     " >" + out),
            0);
  const std::string text = readFile(out);
  EXPECT_NE(text.find("busbw(GB/s)"), std::string::npos) << text;
  EXPECT_NE(text.find("machine:"), std::string::npos) << text;
  const auto doc = nlohmann::json::parse(std::ifstream(json));
  for (const char* key : {"command", "machine", "date", "commit", "peers", "version"}) {
    EXPECT_TRUE(doc["meta"].contains(key)) << key;
  }
  EXPECT_EQ(doc["meta"]["machine"]["link"], "shared memory") << doc["meta"].dump();
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

// A wrong element counted by the checker makes the run fail with 3 (after writing its rows), whether braid bench
// started the ranks or another launcher did. BRAID_BENCH_CORRUPT_ONE=1 is the checker's self-test: one element
// of one rank's result altered per row.
TEST(BenchCommand, ExitsThreeWhenTheCheckerCountsAWrongElement) {
  const std::string braid = braidBinary();
  if (braid.empty() || std::system(("test -x " + braid).c_str()) != 0) GTEST_SKIP() << "braid not built";
  const std::string json = ::testing::TempDir() + "bench_corrupt.json",
                    err = ::testing::TempDir() + "bench_corrupt.txt";
  std::remove(json.c_str());
  EXPECT_EQ(runShell("BRAID_BENCH_CORRUPT_ONE=1 " + braid +
                     " bench allreduce -b 64 -e 4K -f 8 -n 1 -w 0 --nranks 2 --bind none --json " + json +
                     " >/dev/null 2>" + err),
            3);
  const std::string text = readFile(err);
  EXPECT_NE(text.find("1 wrong elements"), std::string::npos) << text;
  const auto doc = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(doc["results"].size(), 3u);  // 64, 512, 4096 bytes
  for (const auto& row : doc["results"]) EXPECT_EQ(row["wrong"], 1) << row.dump();
  // The same run checked correctly passes: the status comes from the count, not from the variable being set.
  EXPECT_EQ(runShell("BRAID_BENCH_CORRUPT_ONE=0 " + braid +
                     " bench allreduce -b 64 -e 64 -n 1 -w 0 --nranks 2 --bind none " + ">/dev/null 2>&1"),
            0);
  EXPECT_EQ(
      runOnFreePort("BRAID_BENCH_CORRUPT_ONE=1 " + braid + " bench allreduce -b 64 -e 64 -n 1 -w 0 >/dev/null 2>&1"),
      3);
}

// Under torchrun's variables (here a job of one rank), braid bench joins the job instead of starting ranks of its own.
TEST(BenchCommand, JoinsTheJobOfATorchrunStyleLauncher) {
  const std::string braid = braidBinary();
  if (braid.empty() || std::system(("test -x " + braid).c_str()) != 0) GTEST_SKIP() << "braid not built";
  const std::string out = ::testing::TempDir() + "bench_torchrun.txt";
  ASSERT_EQ(runOnFreePort(braid + " bench allreduce -b 8 -e 64 -f 8 -n 2 -w 1 --nranks 3 >" + out + " 2>&1"), 0);
  const std::string text = readFile(out);
  EXPECT_NE(text.find("1 ranks"), std::string::npos) << text;  // the launcher's one rank, not --nranks 3
}

TEST(BenchCommand, BadArgumentsAreNamedAndFail) {
  const std::string braid = braidBinary();
  if (braid.empty() || std::system(("test -x " + braid).c_str()) != 0) GTEST_SKIP() << "braid not built";
  const std::string err = ::testing::TempDir() + "bench_err.txt";
  EXPECT_NE(runShell(braid + " bench nosuch 2>" + err), 0);
  EXPECT_NE(runShell(braid + " bench -b 1K -e 8 2>>" + err), 0);
  EXPECT_NE(runShell(braid + " bench -b 8 -e 8 --compare nccl-ish 2>>" + err), 0);
  const std::string text = readFile(err);
  EXPECT_NE(text.find("unknown collective 'nosuch'"), std::string::npos) << text;
  EXPECT_NE(text.find("larger than -e"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown peer 'nccl-ish'"), std::string::npos) << text;
}

// A peer's driver that cannot run (here one that fails at once, as a driver missing a shared library does) fails the
// run with status 4, and the JSON says which peer, for which collective, and what it wrote: a reader of the file
// alone sees why its rows are missing.
TEST(BenchCommand, APeerThatCannotRunIsRecordedInTheFile) {
  const std::string braid = braidBinary();
  if (braid.empty() || std::system(("test -x " + braid).c_str()) != 0) GTEST_SKIP() << "braid not built";
  const std::string dir = ::testing::TempDir() + "bench_failing_peer";
  ASSERT_EQ(runShell("rm -rf " + dir + " && mkdir -p " + dir), 0);
  {
    std::ofstream driver(dir + "/braid-bench-gloo");
    driver << "#!/bin/sh\necho 'braid-bench-gloo: cannot load libgloo.so.0' >&2\nexit 127\n";
  }
  ASSERT_EQ(runShell("chmod +x " + dir + "/braid-bench-gloo"), 0);
  const std::string json = dir + "/out.json";
  const std::string err = dir + "/err.txt";
  EXPECT_EQ(runShell("BRAID_BENCH_DIR=" + dir + " " + braid + " bench allreduce -b 8 -e 8 -n 2 -w 1 --nranks 1 " +
                     "--compare gloo --json " + json + " >/dev/null 2>" + err),
            4)
      << readFile(err);
  const auto doc = nlohmann::json::parse(std::ifstream(json), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << readFile(err);
  const std::string why = doc["meta"]["failed"]["gloo"].value("allreduce", std::string());
  EXPECT_NE(why.find("exit status 127"), std::string::npos) << doc["meta"].dump();
  EXPECT_NE(why.find("cannot load libgloo.so.0"), std::string::npos) << doc["meta"].dump();
  for (const auto& row : doc["results"]) EXPECT_EQ(row["impl"], "braid") << row.dump();
  EXPECT_FALSE(doc["meta"]["peers"].contains("gloo")) << doc["meta"].dump();
}

// --bind core pins braid's ranks and the peers' alike (Gloo's processes through the launcher's plan, Open MPI's by
// mpirun's --bind-to core); more ranks than cores share them, as braid run's do. Under another launcher it is refused:
// that launcher places the ranks.
TEST(BenchCommand, BindPinsEveryLibrarysRanks) {
  const std::string braid = braidBinary();
  if (braid.empty() || std::system(("test -x " + braid).c_str()) != 0) GTEST_SKIP() << "braid not built";
  const std::string json = ::testing::TempDir() + "bench_bind.json";
  const std::string err = ::testing::TempDir() + "bench_bind_err.txt";
  ASSERT_EQ(runShell(braid + " bench allreduce -b 8 -e 4K -f 512 -n 3 -w 1 --nranks 3 --bind core --compare gloo,mpi " +
                     "--json " + json + " >/dev/null 2>" + err),
            0)
      << readFile(err);
  const auto doc = nlohmann::json::parse(std::ifstream(json));
  EXPECT_NE(doc["meta"]["command"].get<std::string>().find("--bind core"), std::string::npos);
  int peers = 0;
  for (const auto& row : doc["results"]) {
    EXPECT_EQ(row["wrong"].get<long>(), 0) << row.dump();
    peers += row["impl"] != "braid";
  }
  EXPECT_EQ(peers, 4);  // 8 B and 4 KiB for each of Gloo and Open MPI
  EXPECT_NE(runShell(braid + " bench --bind socket 2>" + err), 0);
  EXPECT_NE(readFile(err).find("--bind"), std::string::npos) << readFile(err);
  EXPECT_NE(runShell(braid + " run -n 2 -- " + braid + " bench -b 8 -e 8 --bind core >/dev/null 2>" + err), 0);
  EXPECT_NE(readFile(err).find("bind with it (braid run --bind core)"), std::string::npos) << readFile(err);
}

// By default (--bind auto) braid bench binds braid's and Open MPI's ranks a core each where the ranks fit the CPUs it
// may use, and leaves Gloo's processes floating (each runs a progress thread beside its rank); where the ranks
// outnumber the CPUs, and over TCP (braid's mesh has a progress thread too), every library floats. meta.bind records
// each library's placement, since the command line does not say; under another launcher it says "launcher". The CPUs
// braid bench may use are set with taskset, so the test runs alike on any machine with two CPUs or more.
TEST(BenchCommand, AutoBindsWhereTheRanksFitTheCpus) {
  const std::string braid = braidBinary();
  if (braid.empty() || std::system(("test -x " + braid).c_str()) != 0) GTEST_SKIP() << "braid not built";
  const std::string dir = std::getenv("BRAID_BENCH_DIR");
  if (std::system(("test -x " + dir + "/braid-bench-gloo && test -x " + dir + "/braid-bench-mpi && " +
                   "command -v mpirun >/dev/null && command -v taskset >/dev/null")
                      .c_str()) != 0) {
    GTEST_SKIP() << "needs both peers' drivers, mpirun and taskset";
  }
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  const std::string two = std::to_string(cpus[0]) + "," + std::to_string(cpus[1]), one = std::to_string(cpus[0]);
  const std::string json = ::testing::TempDir() + "bench_auto_bind.json";
  const std::string out = ::testing::TempDir() + "bench_auto_bind.txt";
  auto bindOf = [&](const std::string& prefix, const std::string& flags) {
    std::remove(json.c_str());
    EXPECT_EQ(runShell(prefix + braid + " bench allreduce -b 8 -e 8 -n 3 -w 1 " + flags + " --json " + json + " >" +
                       out + " 2>&1"),
              0)
        << readFile(out);
    const auto doc = nlohmann::json::parse(std::ifstream(json), nullptr, false);
    if (doc.is_discarded() || !doc.contains("meta")) return nlohmann::json();
    for (const auto& row : doc["results"]) EXPECT_EQ(row.value("wrong", -2L), 0) << row.dump();
    return doc["meta"].value("bind", nlohmann::json());
  };
  auto of = [](const nlohmann::json& bind, const char* library) {
    return bind.is_object() ? bind.value(library, std::string("missing")) : std::string("not an object");
  };
  // meta.cpus of the last run: each library's ranks' cpulists, as their kernels said.
  auto cpusOf = [&](const char* library) {
    const auto doc = nlohmann::json::parse(std::ifstream(json), nullptr, false);
    if (doc.is_discarded() || !doc["meta"].contains("cpus")) return nlohmann::json();
    return doc["meta"]["cpus"].value(library, nlohmann::json());
  };
  const std::string both = cpus[1] == cpus[0] + 1 ? std::to_string(cpus[0]) + "-" + std::to_string(cpus[1]) : two;
  const auto fitting = bindOf("taskset -c " + two + " ", "--nranks 2 --compare gloo,mpi");
  EXPECT_EQ(of(fitting, "braid"), "core") << fitting.dump();
  EXPECT_EQ(of(fitting, "mpi"), "core") << fitting.dump();
  EXPECT_EQ(of(fitting, "gloo"), "none") << fitting.dump();
  EXPECT_NE(readFile(out).find("# --bind auto: braid's and Open MPI's ranks one CPU each"), std::string::npos)
      << readFile(out);
  // What the ranks got, as the kernel says: a CPU each where bound, both where floating.
  for (const char* library : {"braid", "mpi"}) {
    EXPECT_EQ(cpusOf(library), nlohmann::json({std::to_string(cpus[0]), std::to_string(cpus[1])})) << library;
  }
  EXPECT_EQ(cpusOf("gloo"), nlohmann::json({both, both}));
  // Bound, a rank may use one CPU; the machine it describes still has both.
  EXPECT_NE(readFile(out).find(", 2 cores"), std::string::npos) << readFile(out);
  const auto outnumbered = bindOf("taskset -c " + one + " ", "--nranks 2 --compare gloo,mpi");
  for (const char* library : {"braid", "gloo", "mpi"})
    EXPECT_EQ(of(outnumbered, library), "none") << outnumbered.dump();
  EXPECT_NE(readFile(out).find("# --bind auto: more ranks than CPUs"), std::string::npos) << readFile(out);
  // Two CPUs a rank for braid's helper threads (auto, the default): a block of CPUs a rank, braid's and Open MPI's
  // (mpirun's processing elements).
  const auto helpers = bindOf("taskset -c " + two + " ", "--nranks 1 --compare mpi");
  for (const char* library : {"braid", "mpi"}) EXPECT_EQ(of(helpers, library), "block") << helpers.dump();
  for (const char* library : {"braid", "mpi"}) EXPECT_EQ(cpusOf(library), nlohmann::json({both})) << library;
  EXPECT_NE(readFile(out).find("# --bind auto: braid's and Open MPI's ranks a block of CPUs each"), std::string::npos)
      << readFile(out);
  const auto tcp = bindOf("BRAID_TRANSPORT=tcp taskset -c " + two + " ", "--nranks 2 --compare mpi");
  for (const char* library : {"braid", "mpi"}) EXPECT_EQ(of(tcp, library), "none") << tcp.dump();
  EXPECT_EQ(bindOf(braid + " run -n 2 -- ", ""), "launcher");
}

// --min-loop-ms: small sizes get more calls per loop than -n, large ones keep -n; each row records its count, and
// the peers' rows too, since they are timed by the same loops.
TEST(BenchCommand, AMinimumLoopLengthRaisesAndRecordsTheCalls) {
  const std::string braid = braidBinary();
  if (braid.empty() || std::system(("test -x " + braid).c_str()) != 0) GTEST_SKIP() << "braid not built";
  const std::string json = ::testing::TempDir() + "bench_min_loop.json";
  ASSERT_EQ(
      runShell(braid + " bench allreduce -b 8 -e 8M -f 1024 -n 3 -w 1 --nranks 2 --bind none --min-loop-ms 5 --json " +
               json + " >/dev/null"),
      0);
  const auto doc = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(doc["results"].size(), 3u);  // 8 B, 8 KiB, 8 MiB
  const auto& small = doc["results"][0];
  EXPECT_GT(small["iterations"].get<int>(), 3) << small.dump();
  // The loop that set the count lasted at least a quarter of the 5 ms; the timed ones, about as long.
  EXPECT_GT(small["iterations"].get<double>() * small["time_us"].get<double>(), 1000.0) << small.dump();
  for (const auto& row : doc["results"]) {
    EXPECT_GE(row["iterations"].get<int>(), 3) << row.dump();
    EXPECT_GE(row["voluntary_switches_per_call"].get<double>(), 0.0) << row.dump();
    EXPECT_GE(row["involuntary_switches_per_call"].get<double>(), 0.0) << row.dump();
  }
  const std::string err = ::testing::TempDir() + "bench_min_loop_err.txt";
  EXPECT_NE(runShell(braid + " bench -b 8 -e 8 --mem device --min-loop-ms 5 2>" + err), 0);
  const std::string text = readFile(err);
  EXPECT_NE(text.find("--min-loop-ms"), std::string::npos) << text;
}

}  // namespace
}  // namespace braid::tools
