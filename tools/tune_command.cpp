// `braid tune`: measures this machine's allreduce crossovers by running `braid bench` with each algorithm forced,
// and writes them into the tune file every communicator reads (the environment still overrides it):
//   host: where local ranks switch from direct (every rank reads every input: one round) to reduce-scatter +
//         allgather (each rank reduces 1/n), for each rank count asked -> BRAID_DIRECT_MAX_BYTES_BY_RANKS;
//   device (--mem device): LL up to where one-shot wins, one-shot up to where two-shot wins ->
//         BRAID_CUDA_LL_MAX_BYTES, BRAID_CUDA_ONESHOT_MAX_BYTES.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_json.hpp"
#include "braid/knobs.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "tune_crossover.hpp"

namespace braid::tools {

namespace {

namespace fs = std::filesystem;

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// One forced-algorithm sweep through `braid bench`; its rows' time per size.
std::map<std::size_t, double> sweep(const std::string& algo, bool device, int ranks, const std::string& minBytes,
                                    const std::string& maxBytes, int iters) {
  const fs::path rows = fs::temp_directory_path() / ("braid-tune-" + std::to_string(::getpid()) + "-" + algo + ".json");
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  // BRAID_TUNE_FILE=/dev/null: an earlier tuning must not change what is measured.
  const std::string cmd = "BRAID_ALGO=" + algo + " BRAID_TUNE_FILE=/dev/null " + quote(self) + " bench allreduce -b " +
                          quote(minBytes) + " -e " + quote(maxBytes) + " -f 2 -n " + std::to_string(iters) +
                          (device ? " --mem device" : "") + (ranks > 0 ? " --nranks " + std::to_string(ranks) : "") +
                          " --json " + quote(rows.string()) + " >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  if (status != 0) {
    fs::remove(rows);
    fail(ErrorCode::kInternal, {}, "the ", algo, " sweep failed (exit status ", WEXITSTATUS(status), "): run `",
         "BRAID_ALGO=", algo, " braid bench allreduce -b ", minBytes, " -e ", maxBytes, device ? " --mem device" : "",
         "` to see why");
  }
  std::map<std::size_t, double> times;
  for (const BenchRow& row : readResults(rows.string())) {
    if (row.impl == "braid") times[row.bytes] = row.timeUs;
  }
  fs::remove(rows);
  return times;
}

// Writes `values` into the tune file, keeping the knobs it already holds that this run did not measure.
void updateTuneFile(const std::string& path, const std::vector<std::pair<std::string, std::string>>& values,
                    const std::vector<std::string>& comments) {
  std::vector<std::string> kept;
  {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      const auto eq = line.find('=');
      if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
      bool replaced = false;
      for (const auto& [key, value] : values) replaced |= line.substr(0, eq) == key;
      if (!replaced) kept.push_back(line);
    }
  }
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream file(path);
  if (!file) fail(ErrorCode::kInvalidArgument, {}, "cannot write the tune file ", path);
  for (const std::string& line : kept) file << line << "\n";
  for (const std::string& c : comments) file << "# " << c << "\n";
  for (const auto& [key, value] : values) file << key << "=" << value << "\n";
}

using Times = std::map<std::size_t, double>;

// Runs each algorithm's sweep with a progress line.
std::map<std::string, Times> measure(const std::vector<std::string>& algos, bool device, int ranks,
                                     const std::string& minBytes, const std::string& maxBytes, int iters) {
  std::map<std::string, Times> times;
  for (std::size_t i = 0; i < algos.size(); ++i) {
    std::printf("[%zu/%zu] allreduce, %s buffers, %s, %s..%s ... ", i + 1, algos.size(), device ? "GPU" : "host",
                algos[i].c_str(), minBytes.c_str(), maxBytes.c_str());
    std::fflush(stdout);
    const auto start = std::chrono::steady_clock::now();
    times[algos[i]] = sweep(algos[i], device, ranks, minBytes, maxBytes, iters);
    std::printf("done in %.0f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return times;
}

// "2,4,8" -> {2, 4, 8}; InvalidArgument names what is not a rank count of at least 2.
std::vector<int> rankCounts(const std::string& list) {
  std::vector<int> counts;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    char* end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 2 || n > 4096) {
      fail(ErrorCode::kInvalidArgument, {}, "--nranks '", list, "': '", item, "' is not a rank count of 2 or more");
    }
    counts.push_back(static_cast<int>(n));
    start = comma + 1;
  }
  return counts;
}

}  // namespace

void addTuneCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("tune",
                                 "measure this machine's algorithm crossovers and write them where braid "
                                 "reads them (BRAID_TUNE_FILE)");
  struct Options {
    std::string ranks;  // host: a list; device: one count
    std::string mem = "host";
    std::string minBytes;  // default: host 1K, device 8
    std::string maxBytes;  // default: host 4M, device 512M
    int iters = 20;
    std::string output;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("--mem", o->mem, "host (direct vs rsag among local ranks) or device (LL, one-shot, two-shot)")
      ->check(CLI::IsMember({"host", "device"}));
  cmd->add_option("--nranks", o->ranks,
                  "ranks to tune for (host: a list such as 2,4,8, default the powers of two from 2 up to the cores, "
                  "at most 16; device: one count, default one per GPU)");
  cmd->add_option("-b,--minbytes", o->minBytes, "smallest size (default: host 1K, device 8)");
  cmd->add_option("-e,--maxbytes", o->maxBytes, "largest size (default: host 4M, device 512M)");
  cmd->add_option("-n,--iters", o->iters, "calls per timed loop")->capture_default_str();
  cmd->add_option("--output", o->output,
                  "the tune file to write (default: BRAID_TUNE_FILE, else "
                  "~/.cache/braid/tune.env)");
  cmd->callback([o] {
    try {
      const std::string out = !o->output.empty() ? o->output : tuneFilePath();
      if (out.empty())
        fail(ErrorCode::kInvalidArgument, {}, "no tune file: set HOME or BRAID_TUNE_FILE, or pass --output");
      const std::time_t now = std::time(nullptr);
      char date[32];
      std::strftime(date, sizeof date, "%F", std::localtime(&now));
      std::vector<std::pair<std::string, std::string>> values;
      std::vector<std::string> comments;
      const bool device = o->mem == "device";
      if (o->minBytes.empty()) o->minBytes = device ? "8" : "1K";
      if (o->maxBytes.empty()) o->maxBytes = device ? "512M" : "4M";
      if (device) {
        // LL against one-shot up to the LL area's 512 KiB, then one-shot against two-shot.
        const int ranks = o->ranks.empty() ? 0 : rankCounts(o->ranks).front();
        auto t = measure({"ll", "oneshot", "twoshot"}, true, ranks, o->minBytes, o->maxBytes, o->iters);
        Times ll;
        for (const auto& [bytes, us] : t["ll"]) {
          if (bytes <= (512u << 10)) ll[bytes] = us;
        }
        const Crossover a = keepUpTo(ll, t["oneshot"], "ll", "oneshot");
        const Crossover b = keepUpTo(t["oneshot"], t["twoshot"], "oneshot", "twoshot");
        std::printf("%s%s", crossoverTable(ll, t["oneshot"], "ll", "oneshot").c_str(),
                    crossoverTable(t["oneshot"], t["twoshot"], "oneshot", "twoshot").c_str());
        comments = {std::string("braid tune --mem device, ") + date + ": GPU allreduce", a.why, b.why};
        values = {{"BRAID_CUDA_LL_MAX_BYTES", std::to_string(std::max<std::size_t>(a.maxBytes, 1))},
                  {"BRAID_CUDA_ONESHOT_MAX_BYTES", std::to_string(std::max<std::size_t>(b.maxBytes, 1))}};
        std::printf("%s\n%s\n", a.why.c_str(), b.why.c_str());
      } else {
        // The crossover moves with the rank count, and even two ranks have one on some machines (each reduces
        // half the data instead of all of it): every count asked is measured.
        std::vector<int> counts;
        if (o->ranks.empty()) {
          const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
          for (int n = 2; n <= std::min(cores, 16); n *= 2) counts.push_back(n);
          if (counts.empty()) counts.push_back(2);
        } else {
          counts = rankCounts(o->ranks);
        }
        std::string table;
        comments = {std::string("braid tune, ") + date + ": allreduce over shared memory, per count of local ranks"};
        for (const int ranks : counts) {
          auto t = measure({"direct", "rsag"}, false, ranks, o->minBytes, o->maxBytes, o->iters);
          const Crossover c = keepUpTo(t["direct"], t["rsag"], "direct", "rsag");
          std::printf("%d ranks:\n%s%s\n", ranks, crossoverTable(t["direct"], t["rsag"], "direct", "rsag").c_str(),
                      c.why.c_str());
          comments.push_back(std::to_string(ranks) + " ranks: " + c.why);
          table += (table.empty() ? "" : ",") + std::to_string(ranks) + ":" + std::to_string(c.maxBytes);
        }
        values = {{"BRAID_DIRECT_MAX_BYTES_BY_RANKS", table}};
      }
      updateTuneFile(out, values, comments);
      for (const auto& [key, value] : values)
        std::printf("wrote %s=%s to %s\n", key.c_str(), value.c_str(), out.c_str());
      std::printf("(the environment still overrides these)\n");
    } catch (const Error& e) {
      std::fprintf(stderr, "braid tune: %s\n", e.what());
      setExitStatus(2);
    }
  });
}

}  // namespace braid::tools
