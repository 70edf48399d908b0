// `braid tune`: measures where the host allreduce among local ranks should switch from direct (every rank reads
// every input: one round) to reduce-scatter + allgather (each rank reduces 1/n: more rounds, less reading), by
// running `braid bench` with each algorithm forced, and writes the crossover as BRAID_DIRECT_MAX_BYTES into the tune
// file every communicator reads (the environment still overrides it). GPU crossovers come next.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "base/config.hpp"
#include "base/error.hpp"
#include "bench/bench_json.hpp"
#include "commands.hpp"
#include "tune_crossover.hpp"

namespace braid::tools {

namespace {

namespace fs = std::filesystem;

std::string defaultTuneFile() {
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/braid/tune.env";
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// One forced-algorithm sweep through `braid bench`; its rows' time per size.
std::map<std::size_t, double> sweep(const std::string& algo, int ranks, const std::string& minBytes,
                                    const std::string& maxBytes, int iters) {
  const fs::path rows = fs::temp_directory_path() / ("braid-tune-" + std::to_string(::getpid()) + "-" + algo + ".json");
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  // BRAID_TUNE_FILE=/dev/null: an earlier tuning must not change what is measured.
  const std::string cmd = "BRAID_ALGO=" + algo + " BRAID_TUNE_FILE=/dev/null " + quote(self) + " bench allreduce -b " +
                          quote(minBytes) + " -e " + quote(maxBytes) + " -f 2 -n " + std::to_string(iters) +
                          " --nranks " + std::to_string(ranks) + " --json " + quote(rows.string()) + " >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  if (status != 0) {
    fs::remove(rows);
    fail(ErrorCode::kInternal, {}, "the ", algo, " sweep failed (exit status ", WEXITSTATUS(status), "): run `",
         "BRAID_ALGO=", algo, " braid bench allreduce -b ", minBytes, " -e ", maxBytes, "` to see why");
  }
  std::map<std::size_t, double> times;
  for (const BenchRow& row : readResults(rows.string())) {
    if (row.impl == "braid") times[row.bytes] = row.timeUs;
  }
  fs::remove(rows);
  return times;
}

}  // namespace

void addTuneCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("tune",
                                 "measure this machine's algorithm crossovers and write them where braid "
                                 "reads them (BRAID_TUNE_FILE)");
  struct Options {
    int ranks = 0;
    std::string minBytes = "1K";
    std::string maxBytes = "4M";
    int iters = 20;
    std::string output;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("--nranks", o->ranks, "local ranks to tune for, at least 3 (default: cores, 3..8)");
  cmd->add_option("-b,--minbytes", o->minBytes, "smallest size")->capture_default_str();
  cmd->add_option("-e,--maxbytes", o->maxBytes, "largest size")->capture_default_str();
  cmd->add_option("-n,--iters", o->iters, "calls per timed loop")->capture_default_str();
  cmd->add_option("--output", o->output,
                  "the tune file to write (default: BRAID_TUNE_FILE, else "
                  "~/.cache/braid/tune.env)");
  cmd->callback([o] {
    try {
      // Two ranks always run direct (the same bytes as reduce-scatter + allgather in half the rounds): the
      // crossover exists from three on.
      const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
      const int ranks = o->ranks > 0 ? o->ranks : std::min(8, std::max(3, cores));
      if (ranks < 3) {
        fail(ErrorCode::kInvalidArgument, {}, "--nranks ", ranks,
             ": with 2 ranks braid always runs direct; the crossover to tune exists from 3 ranks on");
      }
      const Settings settings = Settings::fromEnvironment();
      const std::string out = !o->output.empty()           ? o->output
                              : !settings.tuneFile.empty() ? settings.tuneFile
                                                           : defaultTuneFile();
      std::map<std::string, std::map<std::size_t, double>> times;
      const char* algos[] = {"direct", "rsag"};
      for (int i = 0; i < 2; ++i) {
        std::printf("[%d/2] allreduce over shared memory, %d local ranks, %s, %s..%s ... ", i + 1, ranks, algos[i],
                    o->minBytes.c_str(), o->maxBytes.c_str());
        std::fflush(stdout);
        const auto start = std::chrono::steady_clock::now();
        times[algos[i]] = sweep(algos[i], ranks, o->minBytes, o->maxBytes, o->iters);
        std::printf("done in %.0f s\n",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      const Crossover c = directCrossover(times["direct"], times["rsag"]);
      std::printf("%s", crossoverTable(times["direct"], times["rsag"]).c_str());
      fs::create_directories(fs::path(out).parent_path());
      std::ofstream file(out);
      if (!file) fail(ErrorCode::kInvalidArgument, {}, "cannot write the tune file ", out);
      const std::time_t now = std::time(nullptr);
      char date[32];
      std::strftime(date, sizeof date, "%F", std::localtime(&now));
      file << "# braid tune, " << date << ": allreduce over shared memory with " << ranks << " local ranks\n";
      file << "# " << c.why << "\n";
      file << "BRAID_DIRECT_MAX_BYTES=" << c.directMaxBytes << "\n";
      std::printf("%s\nwrote BRAID_DIRECT_MAX_BYTES=%zu to %s (the environment still overrides it)\n", c.why.c_str(),
                  c.directMaxBytes, out.c_str());
    } catch (const Error& e) {
      std::fprintf(stderr, "braid tune: %s\n", e.what());
      setExitStatus(2);
    }
  });
}

}  // namespace braid::tools
