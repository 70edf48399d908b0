// `braid bench [COLLECTIVE]`: nccl-tests-style sweeps of braid, with Gloo and Open MPI side by side (host buffers)
// or NCCL (--mem device, through braid-bench-device).
//
// Started by a launcher (braid run, torchrun, mpirun, srun), it is one rank of that job. Otherwise it is the
// orchestrator: it starts --nranks local ranks of itself (each writes nothing but rank 0's rows), then runs the peers
// it is asked to compare with, and prints, saves and plots everything together.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_json.hpp"
#include "bench/bench_report.hpp"
#include "bench/bench_sweep.hpp"
#include "bench/machine_info.hpp"
#include "bench/peers.hpp"
#include "bench/provenance.hpp"
#include "bench/rank_cpus.hpp"
#include "braid/knobs.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "run/launcher.hpp"

namespace braid::tools {

namespace {

struct BenchArgs {
  BenchOptions options;
  std::string minText = "8", maxText = "64M";
  int nranks = 0;  // 0: as many as usable cores, at least 2 and at most 8
  std::string compare;
  std::string json;
  std::string plot;
  std::string rowsOut;   // internal: where rank 0 of an orchestrated job leaves its rows
  int machineCores = 0;  // internal: the orchestrator's CPUs, for ranks it bound to fewer
  int checkFlag = 1;
  std::vector<std::string> argv;  // as given, for the JSON's "command" and the ranks' command line
  std::string started;            // when this run started (ISO 8601 UTC), the JSON's "date"
};

// Under any launcher braid knows (braid run, torchrun, mpirun, srun), not only braid's own.
bool inLaunchedJob() { return Communicator::launchedByLauncher(); }

std::size_t bytesArg(const std::string& text, const char* flag) {
  const auto v = parseBytes(text);
  if (!v || *v == 0) fail(ErrorCode::kInvalidArgument, {}, flag, " '", text, "' is not a size (e.g. 8, 64K, 16M, 1G)");
  return *v;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// The command line as given, which the ranks and the JSON's "command" repeat.
// The provenance of braid's rows, with what changes what braid runs besides the command: the knobs set in the
// environment (secrets left out) and the values braid tune measured.
nlohmann::json braidMeta(const std::string& command, const std::string& date, const MachineInfo& info,
                         const std::string& link, const std::map<std::string, std::string>& peers) {
  nlohmann::json meta = provenanceMeta(command, date, info, link, peers);
  nlohmann::json knobs = nlohmann::json::object();
  for (const KnobInfo& k : allKnobs()) {
    if (k.name.find("TOKEN") != std::string::npos) continue;
    if (const char* v = std::getenv(k.name.c_str())) knobs[k.name] = v;
  }
  if (!knobs.empty()) meta["knobs"] = knobs;
  if (const std::string tuned = tunedKnobs(); !tuned.empty()) meta["tuned"] = tuned;
  return meta;
}

std::string commandOf(const BenchArgs& a) {
  std::vector<std::string> words = {"braid"};
  words.insert(words.end(), a.argv.begin(), a.argv.end());
  return shellCommand(words);
}

// What joined a peer's ranks, from its driver's meta; a driver that did not say is named as such.
std::string peerLink(const std::string& peer, const nlohmann::json& meta) {
  if (meta.contains("machine") && meta["machine"].is_object() && meta["machine"].contains("link")) {
    return meta["machine"]["link"].get<std::string>();
  }
  return peer + "'s driver did not say";
}

std::string peerVersion(const std::string& peer, const nlohmann::json& meta) {
  if (meta.contains("peers") && meta["peers"].contains(peer)) return meta["peers"][peer].get<std::string>();
  fail(ErrorCode::kInternal, {}, "the ", peer, " driver's results name no version of ", peer,
       " (was it built from an older tree? rebuild the drivers)");
}

std::vector<std::string> collectivesOf(const std::string& name) {
  if (name == "all") return benchCollectives();
  for (const auto& c : benchCollectives()) {
    if (c == name) return {name};
  }
  fail(ErrorCode::kInvalidArgument, {}, "unknown collective '", name,
       "' (allreduce, allgather, reducescatter, broadcast, reduce, alltoall, gather, scatter, sendrecv, all)");
}

// One rank of a job: measure, and let rank 0 print and save.
int runAsRank(const BenchArgs& a, const std::string& collective) {
  int rank = -1;
  try {
    auto comm = Communicator::fromEnvironment();
    rank = comm->rank();
    if (!a.compare.empty() && a.rowsOut.empty()) {
      fail(ErrorCode::kInvalidArgument, {}, "--compare runs peers' own jobs: start braid bench without a launcher ",
           "(braid bench --nranks N --compare ...)");
    }
    std::vector<BenchRow> rows;
    MachineInfo info = rank == 0 ? machineInfo() : MachineInfo{};
    if (a.machineCores > 0) info.cores = a.machineCores;
    const std::string machine = rank == 0 ? machineDescription(info) : "";
    for (const auto& coll : collectivesOf(collective)) {
      if (rank == 0) printHeader(stdout, coll, a.options, comm->size(), machine);
      // On a terminal, rank 0 shows which size is being measured; piped output gets plain lines only.
      const bool progress = rank == 0 && ::isatty(STDERR_FILENO);
      auto part = runSweep(
          *comm, coll, a.options,
          [rank, progress](const BenchRow& row, const std::string& algorithm) {
            if (progress) std::fprintf(stderr, "\r\033[K");
            if (rank == 0) printRow(stdout, row, algorithm);
          },
          [progress, &coll](std::size_t bytes, std::size_t index, std::size_t total) {
            if (progress)
              std::fprintf(stderr, "\r  %s: size %zu of %zu (%zu bytes)...", coll.c_str(), index + 1, total, bytes);
          });
      rows.insert(rows.end(), part.begin(), part.end());
    }
    // Where each rank ran, as the kernel says: every rank's mask gathered, the first rank's meta records them.
    std::vector<std::uint64_t> mask = cpuMaskOfThisThread();
    std::vector<std::uint64_t> masks(kCpuMaskWords * static_cast<std::size_t>(comm->size()));
    comm->allgather(mask.data(), masks.data(), kCpuMaskWords, DataType::kUint64);
    if (rank == 0) {
      nlohmann::json meta = braidMeta(commandOf(a), a.started, info, comm->linkDescription(), {});
      meta["cpus"] = {{"braid", cpuListsOf(masks, comm->size())}};
      // Under another launcher, that launcher placed the ranks (braid bench's own job records its placement itself).
      if (a.rowsOut.empty()) meta["bind"] = "launcher";
      if (!a.rowsOut.empty()) writeResults(a.rowsOut, meta, rows);
      if (a.rowsOut.empty() && !a.json.empty()) writeResults(a.json, meta, rows);
      if (a.rowsOut.empty() && !a.plot.empty()) plotBusbw(a.plot, rows, "braid bench, " + machine);
    }
    // Started by braid bench itself, the orchestrator reports wrong elements from the rows (after saving them);
    // under another launcher, the job's exit status says it.
    if (!a.rowsOut.empty()) return 0;
    long wrong = 0;
    for (const auto& r : rows) wrong += r.wrong > 0 ? r.wrong : 0;
    if (wrong > 0) {
      if (rank == 0) std::fprintf(stderr, "braid bench: %ld wrong elements\n", wrong);
      return 3;
    }
    return 0;
  } catch (const std::exception& e) {
    // Before the communicator exists this rank has no number yet; braid's error names it where it knows it.
    if (rank >= 0) {
      std::fprintf(stderr, "braid bench: rank %d: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "braid bench: %s\n", e.what());
    }
    return 1;
  }
}

// What an orchestrated run ends with: --json and --plot written, and 3 when any row counted wrong elements.
int saveAndCheck(const BenchArgs& a, const nlohmann::json& meta, const std::vector<BenchRow>& rows,
                 const std::string& title) {
  if (!a.json.empty()) {
    writeResults(a.json, meta, rows);
    std::printf("# results: %s\n", a.json.c_str());
  }
  if (!a.plot.empty()) {
    plotBusbw(a.plot, rows, title);
    std::printf("# plot: %s\n", a.plot.c_str());
  }
  int status = 0;
  for (const auto& r : rows) {
    if (r.wrong > 0) {
      std::fprintf(stderr, "braid bench: %s %s at %zu bytes: %ld wrong elements\n", r.impl.c_str(),
                   r.collective.c_str(), r.bytes, r.wrong);
      status = 3;
    }
  }
  return status;
}

// --mem device: one process per GPU (braid-bench-device), braid and NCCL in the same processes.
int orchestrateDevice(const BenchArgs& a, const std::string& collective) {
  bool withNccl = false;
  for (const auto& p : split(a.compare)) {
    if (p != "nccl") fail(ErrorCode::kInvalidArgument, {}, "--compare ", p, " with --mem device: only nccl");
    withNccl = true;
  }
  std::vector<BenchRow> rows;
  nlohmann::json deviceMeta;  // the last driver run's: its machine and link as the GPU ranks saw them, NCCL's version
  for (const auto& coll : collectivesOf(collective)) {
    if (coll == "gather" || coll == "scatter" || coll == "sendrecv") {
      std::fprintf(stderr, "braid bench: --mem device does not sweep %s yet; skipped\n", coll.c_str());
      continue;
    }
    BenchOptions o = a.options;
    o.collective = coll;
    auto part = runDeviceSweep(o, a.nranks, withNccl);
    rows.insert(rows.end(), part.rows.begin(), part.rows.end());
    deviceMeta = part.meta;
  }
  if (withNccl) printComparison(stdout, rows, {"nccl"});
  // The GPU ranks (children) asked the machine; this process holds no CUDA context and must not make one here.
  nlohmann::json meta = deviceMeta.is_object() ? deviceMeta : nlohmann::json::object();
  for (const char* key : {"impl", "mem", "nccl_library", "nccl_version"}) meta.erase(key);  // peers.nccl says it
  meta["command"] = commandOf(a);
  meta["date"] = a.started;
  if (!meta.contains("peers")) meta["peers"] = nlohmann::json::object();
  if (!withNccl) meta["peers"].erase("nccl");
  std::string machine = "device buffers";
  if (meta.contains("machine") && meta["machine"].is_object()) {
    MachineInfo info;
    info.cpu = meta["machine"].value("cpu", "unknown CPU");
    info.cores = meta["machine"].value("cores", 0);
    info.gpus = meta["machine"].value("gpus", std::vector<std::string>{});
    machine = machineDescription(info);
  }
  return saveAndCheck(a, meta, rows, "braid bench " + collective + " (device buffers), " + machine);
}

// Not in a job: start the ranks, then the peers, then report everything.
int orchestrate(const BenchArgs& a, const std::string& collective) {
  collectivesOf(collective);  // a bad name fails here, before anything starts
  const int ranks = a.nranks > 0 ? a.nranks : std::min(8, std::max(2, usableCores()));
  const std::string bind = resolveBind("braid", a.options.bind, ranks);
  const auto peers = split(a.compare);
  for (const auto& p : peers) {
    if (p != "gloo" && p != "mpi") {
      fail(ErrorCode::kInvalidArgument, {}, "--compare: unknown peer '", p, "' (gloo, mpi; nccl with --mem device)");
    }
  }
  // Measured knob values change what braid runs: say so above the table.
  if (const std::string tuned = tunedKnobs(); !tuned.empty()) {
    std::printf("# tuned values in use (braid tune): %s\n", tuned.c_str());
  }
  if (a.options.bind == "auto") {
    std::printf("# --bind auto: %s\n",
                bind == "core" ? "braid's and Open MPI's ranks one CPU each, Gloo's floating (a progress thread beside "
                                 "each rank); --bind none: all float"
                : bind == "block" ? "braid's and Open MPI's ranks a block of CPUs each, for braid's helper threads "
                                    "(BRAID_SHM_THREADS), Gloo's floating; --bind none: all float"
                : ranks > usableCores() ? "more ranks than CPUs, so every library's ranks float"
                                        : "over TCP every library's ranks float (progress threads)");
  }
  std::fflush(stdout);  // above the ranks' table, which they print to the same file
  char tmpl[] = "/tmp/braid-bench-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) fail(ErrorCode::kInternal, {}, "cannot create a temporary file for the ranks' results");
  ::close(fd);
  const std::string rowsFile = tmpl;

  LaunchSpec spec;
  spec.ranks = ranks;
  spec.bind = bind;
  spec.prefixOutput = false;  // rank 0 alone prints the table; errors name their rank themselves
  spec.argv = {std::filesystem::read_symlink("/proc/self/exe").string()};
  spec.argv.insert(spec.argv.end(), a.argv.begin(), a.argv.end());
  spec.argv.insert(spec.argv.end(), {"--rows-out", rowsFile, "--machine-cores", std::to_string(usableCores())});
  const LaunchResult launched = launchLocal(spec);
  if (launched.exitStatus != 0) {
    std::fprintf(stderr, "braid bench: %s\n", launched.message.c_str());
    std::filesystem::remove(rowsFile);
    return launched.exitStatus;
  }
  std::vector<BenchRow> rows = readResults(rowsFile);
  const nlohmann::json ranksMeta = readMeta(rowsFile);
  std::filesystem::remove(rowsFile);

  int status = 0;
  std::vector<std::string> ran;
  std::map<std::string, std::string> versions;
  nlohmann::json binds = {{"braid", bind}};  // what each library's ranks got: the command line may not say
  // Each peer that was asked for and could not run, per collective, and why: the file says where its rows went.
  nlohmann::json failed = nlohmann::json::object();
  // The CPUs each library's ranks could use, per rank, as their kernel masks said (a peer's driver gathers its own).
  nlohmann::json cpus = ranksMeta.value("cpus", nlohmann::json::object());
  std::vector<std::string> links = {"braid: " + peerLink("braid", ranksMeta)};
  for (const auto& p : peers) {
    for (const auto& coll : collectivesOf(collective)) {
      BenchOptions o = a.options;
      o.collective = coll;
      try {
        auto run = runPeer(p, o, ranks);
        if (ran.empty() || ran.back() != p) {
          versions[p] = peerVersion(p, run.meta);  // no rows of a peer whose version is unknown
          binds[p] = run.bind;
          if (run.meta.contains("cpus")) cpus[p] = run.meta["cpus"];
          links.push_back(p + ": " + peerLink(p, run.meta));
          ran.push_back(p);
        }
        rows.insert(rows.end(), run.rows.begin(), run.rows.end());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "braid bench: --compare %s (%s): %s\n", p.c_str(), coll.c_str(), e.what());
        failed[p][coll] = e.what();
        status = 4;  // a peer that could not run is an error, never a silent gap
      }
    }
  }
  if (!ran.empty()) printComparison(stdout, rows, ran);
  const MachineInfo info = machineInfo();
  // Alone, braid's link needs no name; beside peers, each says what joined its own ranks.
  const std::string link = ran.empty() ? peerLink("braid", ranksMeta) : join(links, "; ");
  nlohmann::json meta = braidMeta(commandOf(a), a.started, info, link, versions);
  meta["bind"] = binds;
  meta["cpus"] = cpus;
  if (!failed.empty()) meta["failed"] = failed;
  const int checked =
      saveAndCheck(a, meta, rows,
                   "braid bench " + collective + ", " + std::to_string(ranks) + " ranks, " + machineDescription(info));
  return checked != 0 ? checked : status;
}

}  // namespace

void addBenchCommand(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto collective = std::make_shared<std::string>("allreduce");
  auto* cmd = app.add_subcommand("bench", "nccl-tests-style sweep of a collective, with peers side by side");
  cmd->add_option("collective", *collective,
                  "allreduce (default), allgather, reducescatter, broadcast, reduce, alltoall, gather, scatter, "
                  "sendrecv, all");
  BenchOptions& o = args->options;
  cmd->add_option("-b,--minbytes", args->minText, "smallest size (K/M/G suffixes)")->capture_default_str();
  cmd->add_option("-e,--maxbytes", args->maxText, "largest size")->capture_default_str();
  cmd->add_option("-f,--stepfactor", o.factor, "each size is the previous times this")->capture_default_str();
  cmd->add_option("-n,--iters", o.iterations, "calls per timed loop")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("-w,--warmup_iters", o.warmup, "warm-up calls per size")->capture_default_str();
  cmd->add_option("--reps", o.repetitions, "timed loops per size (the median counts)")
      ->capture_default_str()
      ->check(CLI::Range(3, 1000));
  cmd->add_option("--min-loop-ms", o.minLoopMs,
                  "more calls per timed loop than -n where that many would take less than this (0: always -n); the "
                  "rows record the count")
      ->capture_default_str()
      ->check(CLI::Range(0, 60000));
  cmd->add_option("-c,--check", args->checkFlag,
                  "check results (0|1); BRAID_BENCH_CORRUPT_ONE=1 tests the check: it alters one element of one "
                  "rank's result per size, so every row must count 1 wrong element and braid bench exit 3")
      ->capture_default_str();
  cmd->add_option("-o,--op", o.op, "reduce op: sum, prod, min, max, avg")->capture_default_str();
  cmd->add_option("-d,--datatype", o.dtype,
                  "float, half, bfloat16, double, int32, float8_e4m3, float8_e5m2, ... or braid's names")
      ->capture_default_str();
  cmd->add_option("-r,--root", o.root, "root rank")->capture_default_str();
  cmd->add_flag("--inplace", o.inplace, "in-place operation");
  cmd->add_option("--mem", o.mem, "host, or device (GPU buffers, one process per GPU; --compare nccl)")
      ->capture_default_str();
  cmd->add_option("--bind", o.bind,
                  "pin the ranks braid bench starts, and the peers' alike: none, core (one CPU a rank), block (the "
                  "CPUs divided among the ranks), numa, or auto (core where the ranks fit the CPUs, block there with "
                  "BRAID_SHM_THREADS, else none; Gloo's float, and all over TCP)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "none", "core", "block", "numa"}));
  cmd->add_option("--nranks", args->nranks, "local ranks to start when not run by a launcher (default: cores, 2..8)");
  cmd->add_option("--compare", args->compare, "peers to run the same sweep with: gloo,mpi (host), nccl (device)");
  cmd->add_option("--json", args->json, "write all rows as JSON");
  cmd->add_option("--plot", args->plot, "write busbw vs size as a PNG (needs gnuplot)");
  cmd->add_option("--rows-out", args->rowsOut, "(internal) where rank 0 leaves its rows")->group("");
  cmd->add_option("--machine-cores", args->machineCores, "(internal) the CPUs of the machine's description")->group("");
  cmd->callback([args, collective] {
    BenchArgs& a = *args;
    a.argv = commandLine();  // as given: the ranks get the same, and the JSON records it
    a.started = isoNow();
    try {
      a.options.minBytes = bytesArg(a.minText, "-b");
      a.options.maxBytes = bytesArg(a.maxText, "-e");
      a.options.check = a.checkFlag != 0;
      // A self-test of the checker (tests/tools/bench_test.cpp): one element of one rank's result is altered before
      // each check, so the run must count exactly one wrong element per row and exit 3. Never for measurements.
      if (const char* corrupt = std::getenv("BRAID_BENCH_CORRUPT_ONE"); corrupt && std::string(corrupt) == "1") {
        a.options.corruptOne = true;
        // A self-test that cannot alter anything must not pass as one.
        if (!a.options.check || a.options.mem != "host") {
          fail(ErrorCode::kInvalidArgument, {}, "BRAID_BENCH_CORRUPT_ONE=1 tests the check of host buffers: it needs ",
               "-c 1 and --mem host");
        }
      }
      if (a.options.mem != "host" && a.options.mem != "device") {
        fail(ErrorCode::kInvalidArgument, {}, "--mem ", a.options.mem, ": host or device");
      }
      // The ranks braid bench starts see the same flags; under another launcher the launcher places the ranks (auto
      // leaves them where it put them).
      const bool binds = a.options.bind != "none" && a.options.bind != "auto";
      if (binds && inLaunchedJob() && a.rowsOut.empty()) {
        fail(ErrorCode::kInvalidArgument, {}, "--bind pins the ranks braid bench starts; under a launcher, bind with ",
             "it (braid run --bind ", a.options.bind, ")");
      }
      if (binds && a.options.mem == "device") {
        fail(ErrorCode::kInvalidArgument, {}, "--bind places host ranks; --mem device starts one process per GPU");
      }
      if (a.options.minLoopMs > 0 && a.options.mem == "device") {
        fail(ErrorCode::kInvalidArgument, {}, "--min-loop-ms times host buffers' loops; --mem device times -n calls");
      }
      if (a.options.minBytes > a.options.maxBytes) {
        fail(ErrorCode::kInvalidArgument, {}, "-b ", a.options.minBytes, " is larger than -e ", a.options.maxBytes);
      }
      a.options.collective = *collective;
      if (a.options.mem == "device") {
        if (inLaunchedJob()) {
          fail(ErrorCode::kInvalidArgument, {}, "--mem device starts one process per GPU itself: run braid bench ",
               "without a launcher");
        }
        setExitStatus(orchestrateDevice(a, *collective));
      } else {
        setExitStatus(inLaunchedJob() ? runAsRank(a, *collective) : orchestrate(a, *collective));
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "braid bench: %s\n", e.what());
      setExitStatus(2);
    }
  });
}

}  // namespace braid::tools
