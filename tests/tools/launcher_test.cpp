// braid run's launcher: the ranks' environment, prefixed output, stopping a failed job, binding, exit statuses.
// The launcher writes to LaunchSpec::outFd/errFd; the tests point them at temporary files and read those back.
#include "run/launcher.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "braid/types.hpp"

namespace braid::tools {
namespace {

struct Captured {
  LaunchResult result;
  std::string out, err;
  double seconds = 0;
};

std::string readAll(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[65536];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
  std::fclose(file);
  return text;
}

Captured launch(LaunchSpec spec) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  EXPECT_TRUE(out && err);
  spec.outFd = fileno(out);
  spec.errFd = fileno(err);
  const auto start = std::chrono::steady_clock::now();
  Captured captured;
  captured.result = launchLocal(spec);
  captured.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  captured.out = readAll(out);
  captured.err = readAll(err);
  return captured;
}

LaunchSpec program(int ranks, std::vector<std::string> argv) {
  LaunchSpec spec;
  spec.ranks = ranks;
  spec.argv = std::move(argv);
  return spec;
}

LaunchSpec shell(int ranks, const std::string& script) { return program(ranks, {"/bin/sh", "-c", script}); }

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) result.push_back(line);
  return result;
}

// "[2] a b c" -> rank 2, fields {a, b, c}; the prefix must be there.
std::map<int, std::vector<std::string>> fieldsByRank(const std::string& text) {
  std::map<int, std::vector<std::string>> byRank;
  for (const std::string& line : lines(text)) {
    int rank = -1;
    EXPECT_EQ(std::sscanf(line.c_str(), "[%d] ", &rank), 1) << "line without prefix: " << line;
    std::istringstream in(line.substr(line.find(']') + 2));
    std::vector<std::string> fields;
    for (std::string field; in >> field;) fields.push_back(field);
    EXPECT_TRUE(byRank.emplace(rank, fields).second) << "two lines from rank " << rank;
  }
  return byRank;
}

TEST(LauncherTest, EveryRankGetsItsEnvironmentAndPrefixedLines) {
  const std::string script =
      "echo rank $RANK of $WORLD_SIZE local $LOCAL_RANK $LOCAL_WORLD_SIZE $BRAID_RANK $BRAID_WORLD_SIZE "
      "$BRAID_LOCAL_RANK $BRAID_ROOT_ADDR $MASTER_ADDR $MASTER_PORT $BRAID_TOKEN $EXTRA";
  LaunchSpec spec = shell(3, script);
  spec.extraEnv = {{"EXTRA", "extra-value"}, {"BRAID_WORLD_SIZE", "overridden"}};
  const Captured job = launch(spec);
  ASSERT_EQ(job.result.exitStatus, 0) << job.result.message << job.err;
  EXPECT_EQ(job.result.message, "");
  EXPECT_EQ(job.err, "");
  const auto byRank = fieldsByRank(job.out);
  ASSERT_EQ(byRank.size(), 3u) << job.out;
  std::set<std::string> tokens, roots, masterPorts;
  for (const auto& [rank, f] : byRank) {
    ASSERT_EQ(f.size(), 15u) << job.out;
    const std::string r = std::to_string(rank);
    EXPECT_EQ(f[0], "rank");
    EXPECT_EQ(f[1], r);
    EXPECT_EQ(f[3], "3");
    EXPECT_EQ(f[5], r);             // LOCAL_RANK
    EXPECT_EQ(f[6], "3");           // LOCAL_WORLD_SIZE
    EXPECT_EQ(f[7], r);             // BRAID_RANK
    EXPECT_EQ(f[8], "overridden");  // extraEnv comes after the standard variables
    EXPECT_EQ(f[9], r);             // BRAID_LOCAL_RANK
    EXPECT_EQ(f[10].rfind("127.0.0.1:", 0), 0u) << f[10];
    EXPECT_EQ(f[11], "127.0.0.1");
    EXPECT_NE(f[10], "127.0.0.1:" + f[12]) << "BRAID_ROOT_ADDR must not use MASTER_PORT";
    EXPECT_EQ(f[13].size(), 32u);
    EXPECT_EQ(f[13].find_first_not_of("0123456789abcdef"), std::string::npos) << f[13];
    EXPECT_EQ(f[14], "extra-value");
    roots.insert(f[10]);
    masterPorts.insert(f[12]);
    tokens.insert(f[13]);
  }
  EXPECT_EQ(tokens.size(), 1u);
  EXPECT_EQ(roots.size(), 1u);
  EXPECT_EQ(masterPorts.size(), 1u);

  const Captured again = launch(shell(1, "echo $BRAID_TOKEN"));
  ASSERT_EQ(again.result.exitStatus, 0);
  EXPECT_NE(again.out, "[0] " + *tokens.begin() + "\n") << "the token must be fresh per job";
  EXPECT_EQ(again.out.size(), 4u + 32u + 1u) << again.out;
}

TEST(LauncherTest, StderrIsPrefixedToo) {
  const Captured job = launch(shell(2, "echo out-$RANK; echo err-$RANK >&2"));
  ASSERT_EQ(job.result.exitStatus, 0);
  std::vector<std::string> out = lines(job.out), err = lines(job.err);
  std::sort(out.begin(), out.end());
  std::sort(err.begin(), err.end());
  EXPECT_EQ(out, (std::vector<std::string>{"[0] out-0", "[1] out-1"}));
  EXPECT_EQ(err, (std::vector<std::string>{"[0] err-0", "[1] err-1"}));
}

TEST(LauncherTest, WithoutPrefixRanksWriteStraightThrough) {
  LaunchSpec spec = shell(1, "echo plain");
  spec.prefixOutput = false;
  const Captured job = launch(spec);
  ASSERT_EQ(job.result.exitStatus, 0);
  EXPECT_EQ(job.out, "plain\n");
}

TEST(LauncherTest, LongLinesAndUnterminatedLinesStayWhole) {
  // 100 KB lines from three ranks at once, then a last line without a newline.
  const Captured job = launch(shell(3, "head -c 100000 /dev/zero | tr '\\0' x; echo; printf tail-$RANK"));
  ASSERT_EQ(job.result.exitStatus, 0) << job.result.message;
  const std::string longLine(100000, 'x');
  std::multiset<std::string> got;
  for (const std::string& line : lines(job.out)) got.insert(line);
  const std::multiset<std::string> want = {"[0] " + longLine, "[1] " + longLine, "[2] " + longLine,
                                           "[0] tail-0",      "[1] tail-1",      "[2] tail-2"};
  EXPECT_TRUE(got == want) << "got " << got.size() << " lines, " << job.out.size() << " bytes";
}

TEST(LauncherTest, FailingRankStopsTheOthers) {
  // The others run sleep as a child of the shell: stopping them must reach the whole process group.
  const Captured job = launch(shell(3, "if [ $RANK = 1 ]; then exit 3; fi; sleep 30"));
  EXPECT_EQ(job.result.exitStatus, 3);
  EXPECT_EQ(job.result.message, "rank 1 exited with status 3; stopped ranks 0, 2");
  EXPECT_LT(job.seconds, 5.0);
}

TEST(LauncherTest, KilledRankGives128PlusSignal) {
  const Captured job = launch(shell(2, "if [ $RANK = 0 ]; then kill -9 $$; fi; sleep 30"));
  EXPECT_EQ(job.result.exitStatus, 137);
  EXPECT_NE(job.result.message.find("rank 0 was killed by signal 9 ("), std::string::npos) << job.result.message;
  EXPECT_NE(job.result.message.find("stopped ranks 1"), std::string::npos) << job.result.message;
  EXPECT_LT(job.seconds, 5.0);
}

TEST(LauncherTest, RankIgnoringSigtermGetsSigkill) {
  // `trap "" TERM` makes the shell and its sleep ignore SIGTERM: only SIGKILL, 3 s later, ends them. Rank 1 fails
  // 0.3 s late so that rank 0 has set its trap by then.
  const Captured job = launch(shell(2, "if [ $RANK = 1 ]; then sleep 0.3; exit 5; fi; trap '' TERM; sleep 30"));
  EXPECT_EQ(job.result.exitStatus, 5);
  EXPECT_NE(job.result.message.find("rank 1 exited with status 5; stopped ranks 0; SIGKILL after 3 s for ranks 0"),
            std::string::npos)
      << job.result.message;
  EXPECT_GT(job.seconds, 2.5);
  EXPECT_LT(job.seconds, 6.0);
}

TEST(LauncherTest, SignalToLauncherIsForwarded) {
  // Rank 0 interrupts the launcher (this test process), which must pass SIGINT on to both ranks. The ranks exec
  // sleep: a shell that catches SIGINT (dash with -c does) while forking its child would hold it until the child
  // ends, and that is the shell's business, not the launcher's. Rank 0 waits 0.2 s so rank 1 is asleep by then.
  const Captured job = launch(shell(2, "if [ $RANK = 0 ]; then sleep 0.2; kill -INT $PPID; fi; exec sleep 30"));
  EXPECT_EQ(job.result.exitStatus, 130);
  EXPECT_EQ(job.result.message, "received signal 2 (Interrupt); forwarded it to ranks 0, 1");
  EXPECT_LT(job.seconds, 2.0);
}

TEST(LauncherTest, MissingProgramGives127AndStartsNothing) {
  const Captured job = launch(program(2, {"braid-no-such-program", "--flag"}));
  EXPECT_EQ(job.result.exitStatus, 127);
  EXPECT_EQ(job.result.message, "cannot execute 'braid-no-such-program': No such file or directory");
  EXPECT_EQ(job.out, "");

  const Captured notExecutable = launch(program(1, {"/etc/passwd"}));
  EXPECT_EQ(notExecutable.result.exitStatus, 126);
  EXPECT_EQ(notExecutable.result.message, "cannot execute '/etc/passwd': Permission denied");
}

TEST(LauncherTest, PathLookupFindsPrograms) {
  const Captured job = launch(program(1, {"echo", "-n", "found"}));
  ASSERT_EQ(job.result.exitStatus, 0) << job.result.message;
  EXPECT_EQ(job.out, "[0] found\n");
}

// The CPUs this process may run on (its affinity), in order; empty if the kernel would not say.
std::vector<int> cpusOfThisProcess() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

TEST(LauncherTest, BindCorePinsEachRankToOneCpu) {
  const std::vector<int> allowed = cpusOfThisProcess();
  ASSERT_FALSE(allowed.empty());
  LaunchSpec spec = shell(3, "grep Cpus_allowed_list /proc/self/status");
  spec.bind = "core";
  const Captured job = launch(spec);
  ASSERT_EQ(job.result.exitStatus, 0) << job.result.message;
  const auto byRank = fieldsByRank(job.out);
  ASSERT_EQ(byRank.size(), 3u) << job.out;
  for (const auto& [rank, f] : byRank) {
    ASSERT_EQ(f.size(), 2u) << job.out;
    EXPECT_EQ(f[1], std::to_string(allowed[rank % allowed.size()])) << "rank " << rank;
  }
}

// block: the CPUs dealt out in equal runs, a run a rank, so that a rank's threads have CPUs of its own.
TEST(LauncherTest, BindBlockPinsEachRankToARunOfCpus) {
  const std::vector<int> allowed = cpusOfThisProcess();
  ASSERT_FALSE(allowed.empty());
  for (int ranks : {1, 2, 3}) {
    LaunchSpec spec = shell(ranks, "grep Cpus_allowed_list /proc/self/status");
    spec.bind = "block";
    const Captured job = launch(spec);
    ASSERT_EQ(job.result.exitStatus, 0) << job.result.message;
    const auto byRank = fieldsByRank(job.out);
    ASSERT_EQ(byRank.size(), static_cast<std::size_t>(ranks)) << job.out;
    // Each rank as many CPUs as the ranks divide, of those allowed; apart from each other where they fit (which
    // ones is the plan's choice: a core's hardware threads together).
    const std::size_t each = std::max<std::size_t>(1, allowed.size() / static_cast<std::size_t>(ranks));
    std::set<int> taken;
    for (const auto& [rank, f] : byRank) {
      ASSERT_EQ(f.size(), 2u) << job.out;
      const std::vector<int> got = parseCpuList(f[1]);
      EXPECT_EQ(got.size(), each) << "rank " << rank << " of " << ranks << ": " << f[1];
      for (int cpu : got) {
        EXPECT_NE(std::find(allowed.begin(), allowed.end(), cpu), allowed.end()) << cpu;
        if (static_cast<std::size_t>(ranks) <= allowed.size()) {
          EXPECT_TRUE(taken.insert(cpu).second) << cpu;
        }
      }
    }
    if (static_cast<std::size_t>(ranks) > allowed.size()) {
      EXPECT_NE(job.err.find("--bind block: " + std::to_string(ranks) + " ranks share"), std::string::npos) << job.err;
    }
  }
}

TEST(LauncherTest, BindNumaPinsOrWarns) {
  LaunchSpec spec = shell(2, "grep Cpus_allowed_list /proc/self/status");
  spec.bind = "numa";
  const Captured job = launch(spec);
  ASSERT_EQ(job.result.exitStatus, 0) << job.result.message << job.err;
  EXPECT_EQ(fieldsByRank(job.out).size(), 2u) << job.out;
  // Either bound quietly, or one warning line that says why not.
  EXPECT_TRUE(job.err.empty() || job.err.find("no NUMA information") != std::string::npos) << job.err;
}

TEST(LauncherTest, MalformedSpecsAreRefused) {
  EXPECT_THROW(launchLocal(program(0, {"true"})), Error);
  EXPECT_THROW(launchLocal(program(1, {})), Error);
  LaunchSpec badBind = program(1, {"true"});
  badBind.bind = "socket";
  EXPECT_THROW(launchLocal(badBind), Error);
}

TEST(LauncherTest, ParsesCpuLists) {
  EXPECT_EQ(parseCpuList("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parseCpuList("5"), (std::vector<int>{5}));
  EXPECT_EQ(parseCpuList("\n"), (std::vector<int>{}));
  EXPECT_THROW(parseCpuList("3-1"), Error);
  EXPECT_THROW(parseCpuList("1,,2"), Error);
  EXPECT_THROW(parseCpuList("a-b"), Error);
}

}  // namespace
}  // namespace braid::tools
