// runPeer(): the peers' drivers run a tiny sweep and hand back checked rows; what cannot run says who and why.
#include "bench/peers.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "bench/machine_info.hpp"

namespace braid::tools {
namespace {

namespace fs = std::filesystem;

// The drivers are built into the build's bin/, next to `braid`; this test runs from the build's tests/.
class PeersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::getenv("BRAID_BENCH_DIR") == nullptr) {
      const fs::path bin = fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "bin";
      ::setenv("BRAID_BENCH_DIR", bin.c_str(), 1);
    }
  }

  static bool built(const std::string& driver) { return ::access((peerDriverDir() + "/" + driver).c_str(), X_OK) == 0; }

  static BenchOptions tinySweep() {
    BenchOptions o;
    o.collective = "allreduce";
    o.minBytes = 8;
    o.maxBytes = 4096;
    o.iterations = 2;
    o.warmup = 1;
    o.bind = "none";  // not about placement: tests run side by side would pin their ranks onto the same CPUs
    return o;
  }

  static void expectCheckedRows(const std::vector<BenchRow>& rows, const std::string& impl) {
    ASSERT_EQ(rows.size(), 10u) << "8 B .. 4 KiB doubling";
    std::size_t bytes = 8;
    for (const auto& r : rows) {
      EXPECT_EQ(r.impl, impl);
      EXPECT_EQ(r.collective, "allreduce");
      EXPECT_EQ(r.dtype, "float32");
      EXPECT_EQ(r.redop, "sum");
      EXPECT_EQ(r.bytes, bytes);
      EXPECT_EQ(r.count, bytes / 4);
      EXPECT_EQ(r.ranks, 2);
      EXPECT_GT(r.timeUs, 0);
      EXPECT_EQ(r.wrong, 0) << impl << " at " << r.bytes << " bytes";
      EXPECT_EQ(r.iterations, 2) << impl << " at " << r.bytes << " bytes";
      EXPECT_GE(r.voluntarySwitchesPerCall, 0.0) << impl << " at " << r.bytes << " bytes";
      EXPECT_GE(r.involuntarySwitchesPerCall, 0.0) << impl << " at " << r.bytes << " bytes";
      bytes *= 2;
    }
  }

  static std::string errorOf(const std::string& peer, const BenchOptions& o, int ranks) {
    try {
      runPeer(peer, o, ranks);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(no error)";
  }
};

TEST_F(PeersTest, GlooRunsACheckedSweep) {
  if (!built("braid-bench-gloo")) GTEST_SKIP() << "braid-bench-gloo is not built (no libgloo-dev): " << peerDriverDir();
  const PeerRun run = runPeer("gloo", tinySweep(), 2);
  expectCheckedRows(run.rows, "gloo");
  // The driver's results say which Gloo ran and over what, for the results' meta.
  EXPECT_EQ(run.meta["peers"].value("gloo", "").rfind("Gloo ", 0), 0u) << run.meta.dump();
  EXPECT_NE(run.meta["machine"].value("link", "").find("loopback"), std::string::npos) << run.meta.dump();
}

TEST_F(PeersTest, MpiRunsACheckedSweep) {
  if (!built("braid-bench-mpi"))
    GTEST_SKIP() << "braid-bench-mpi is not built (no libopenmpi-dev): " << peerDriverDir();
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not on PATH (openmpi-bin)";
  const PeerRun run = runPeer("mpi", tinySweep(), 2);
  expectCheckedRows(run.rows, "mpi");
  // MPI_Get_library_version's own words, and the btl mpirun was told to use.
  EXPECT_EQ(run.meta["peers"].value("mpi", "").rfind("Open MPI", 0), 0u) << run.meta.dump();
  EXPECT_NE(run.meta["machine"].value("link", "").find("btl self,"), std::string::npos) << run.meta.dump();
}

// The drivers take --min-loop-ms as braid's sweep does (the same timed loops), and their rows say how many calls
// a loop made.
TEST_F(PeersTest, APeerTimesLoopsOfTheMinimumLength) {
  if (!built("braid-bench-gloo")) GTEST_SKIP() << "braid-bench-gloo is not built (no libgloo-dev): " << peerDriverDir();
  BenchOptions o = tinySweep();
  o.maxBytes = 8;
  o.minLoopMs = 20;
  const PeerRun run = runPeer("gloo", o, 2);
  ASSERT_EQ(run.rows.size(), 1u);
  EXPECT_GT(run.rows[0].iterations, 2);
  EXPECT_GT(run.rows[0].iterations * run.rows[0].timeUs, 5000.0);  // microseconds: at least a quarter of the 20 ms
}

TEST_F(PeersTest, UnknownPeerIsNamed) {
  const std::string what = errorOf("nccl-from-mars", tinySweep(), 2);
  EXPECT_NE(what.find("nccl-from-mars"), std::string::npos) << what;
}

TEST_F(PeersTest, MissingDriverNamesItsPackage) {
  const char* saved = std::getenv("BRAID_BENCH_DIR");
  const std::string keep = saved ? saved : "";
  const fs::path empty = fs::temp_directory_path() / ("braid-peers-test-" + std::to_string(::getpid()));
  fs::create_directories(empty);
  ::setenv("BRAID_BENCH_DIR", empty.c_str(), 1);
  const std::string what = errorOf("gloo", tinySweep(), 2);
  ::setenv("BRAID_BENCH_DIR", keep.c_str(), 1);
  fs::remove_all(empty);
  EXPECT_NE(what.find("braid-bench-gloo"), std::string::npos) << what;
  EXPECT_NE(what.find("libgloo-dev"), std::string::npos) << what;
}

TEST_F(PeersTest, DriverRefusalComesBackWithItsReason) {
  if (!built("braid-bench-mpi"))
    GTEST_SKIP() << "braid-bench-mpi is not built (no libopenmpi-dev): " << peerDriverDir();
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not on PATH (openmpi-bin)";
  BenchOptions o = tinySweep();
  o.dtype = "float16";  // MPI has no standard half type
  const std::string what = errorOf("mpi", o, 2);
  EXPECT_NE(what.find("peer mpi"), std::string::npos) << what;
  EXPECT_NE(what.find("float16"), std::string::npos) << what;
}

}  // namespace
}  // namespace braid::tools

namespace braid::tools {
namespace {

// --bind auto, library by library: an explicit value holds for every library; auto binds braid's and Open MPI's ranks
// a core each where they fit the usable CPUs (a block each where braid's helper threads could have two or more),
// never Gloo's (a progress thread beside each rank), and nothing over TCP or where the ranks outnumber the CPUs.
TEST(ResolveBind, AutoBindsTheSpinningLibrariesWhereTheRanksFit) {
  for (const char* library : {"braid", "gloo", "mpi"}) {
    for (const char* bind : {"none", "core", "block", "numa"}) {
      EXPECT_EQ(resolveBind(library, bind, 1 << 12), bind) << library;
    }
  }
  const int cpus = usableCores();
  const char* transport = std::getenv("BRAID_TRANSPORT");
  const std::string saved = transport ? transport : "";
  ::unsetenv("BRAID_TRANSPORT");
  EXPECT_EQ(resolveBind("braid", "auto", cpus), "core");
  EXPECT_EQ(resolveBind("mpi", "auto", cpus), "core");
  EXPECT_EQ(resolveBind("gloo", "auto", 1), "none");
  EXPECT_EQ(resolveBind("braid", "auto", cpus + 1), "none");
  EXPECT_EQ(resolveBind("mpi", "auto", cpus + 1), "none");
  // With helper threads (the default) a rank that could have two CPUs or more gets a block of them, Open MPI's
  // alike; Gloo's still float.
  const char* threads = std::getenv("BRAID_SHM_THREADS");
  const std::string savedThreads = threads ? threads : "";
  for (const char* helpers : {"auto", "", "unset"}) {
    if (std::string(helpers) == "unset") {
      ::unsetenv("BRAID_SHM_THREADS");
    } else {
      ::setenv("BRAID_SHM_THREADS", helpers, 1);
    }
    if (cpus >= 2) {
      EXPECT_EQ(resolveBind("braid", "auto", cpus / 2), "block") << helpers;
      EXPECT_EQ(resolveBind("mpi", "auto", cpus / 2), "block") << helpers;
    }
    EXPECT_EQ(resolveBind("braid", "auto", cpus), "core") << helpers;  // a CPU a rank: nothing for helpers
    EXPECT_EQ(resolveBind("gloo", "auto", 1), "none") << helpers;
    EXPECT_EQ(resolveBind("braid", "auto", cpus + 1), "none") << helpers;
  }
  ::setenv("BRAID_SHM_THREADS", "1", 1);
  if (cpus >= 2) {
    EXPECT_EQ(resolveBind("braid", "auto", cpus / 2), "core");
  }
  if (threads) {
    ::setenv("BRAID_SHM_THREADS", savedThreads.c_str(), 1);
  } else {
    ::unsetenv("BRAID_SHM_THREADS");
  }
  ::setenv("BRAID_TRANSPORT", "tcp", 1);
  EXPECT_EQ(resolveBind("braid", "auto", 1), "none");
  EXPECT_EQ(resolveBind("mpi", "auto", 1), "none");
  if (transport) {
    ::setenv("BRAID_TRANSPORT", saved.c_str(), 1);
  } else {
    ::unsetenv("BRAID_TRANSPORT");
  }
}

}  // namespace
}  // namespace braid::tools
