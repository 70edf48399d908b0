#include "base/config.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <variant>

#include "base/error.hpp"

namespace braid {

namespace {

using Field = std::variant<long Settings::*, std::size_t Settings::*, double Settings::*, std::string Settings::*>;

struct KnobRow {
  KnobInfo info;
  Field field;
};

// The one declaration of every knob. Defaults are text so that they go through the same parser as the
// environment. allKnobs() lists them sorted by name.
const std::vector<KnobRow>& rows() {
  static const std::vector<KnobRow> kRows = {
      {{"BRAID_WORLD_SIZE", KnobType::kString, "", "number of ranks in the job (set by the launcher)"},
       &Settings::worldSize},
      {{"BRAID_ALGO", KnobType::kString, "",
        "force algorithms: host allreduce direct or rsag (reduce-scatter + allgather) over shared memory, direct, "
        "doubling or ring over TCP; GPU allreduce ll, oneshot, "
        "twoshot, staged (through host memory) or shared (ranks sharing a GPU; see BRAID_CUDA_SHARED_GPU); "
        "comma-separated, one per path; empty lets braid choose"},
       &Settings::algo},
      // 0: tuning/device_path.cpp sizes each kernel's grid.
      {{"BRAID_CUDA_BLOCKS", KnobType::kInt, "0",
        "thread blocks of every GPU collective kernel (1-128); 0 lets braid choose by size"},
       &Settings::cudaBlocks},
      // 64 MiB: two parities of (ranks + 1) slots; with 2 ranks a slot is ~10 MiB, so a round's synchronisation
      // (a few microseconds) is noise against moving it over NVLink (~30 us at 350 GB/s).
      {{"BRAID_CUDA_WORKSPACE_BYTES", KnobType::kBytes, "64M",
        "GPU memory each rank shares with its peers for the collective kernels (inboxes and flags)"},
       &Settings::cudaWorkspaceBytes},
      // auto: cuMem's POSIX fds survive their owner and need no per-allocation IPC state; some drivers and
      // containers cannot export them, and cudaIpc handles still work there.
      {{"BRAID_CUDA_MEMORY", KnobType::kString, "auto",
        "how ranks share GPU workspaces: auto (cuMem with POSIX fds, else cudaIpc handles), vmm or ipc"},
       &Settings::cudaMemory},
      // auto: without MPS the GPU runs one process's work at a time in ~2 ms slices, so kernels that wait for
      // another process's kernel wait out a slice per call; MPS runs them together. Threads of one process share
      // a context, but their kernels need not be resident together, so they take the shared path too.
      {{"BRAID_CUDA_SHARED_GPU", KnobType::kString, "auto",
        "ranks that share a GPU: auto (the shared path, copies and local kernels ordered by the host, unless an MPS "
        "server is running), shared, or kernels (braid's collective kernels, which CUDA graphs can capture)"},
       &Settings::cudaSharedGpu},
      // Empty: the record stays in memory (Communicator::flightRecord); a file per rank needs a place to go.
      {{"BRAID_FLIGHT_RECORDER", KnobType::kString, "",
        "PREFIX: when a failure leaves the ranks out of step (timeout, lost peer, mismatch, abort), each rank writes "
        "its last calls as JSON to PREFIX.rankR.json; empty: only Communicator::flightRecord()"},
       &Settings::flightRecorder},
      // Off: a library should not take a signal unless asked; USR1/USR2 are the ones left to applications.
      {{"BRAID_FLIGHT_RECORDER_SIGNAL", KnobType::kString, "",
        "USR1 or USR2: on that signal every communicator of the process writes its flight record to "
        "BRAID_FLIGHT_RECORDER's PREFIX.rankR.json and goes on (kill -USR1 PID on a job that seems stuck); empty: off"},
       &Settings::flightRecorderSignal},
      // A file per communicator: split communicators get their own; a hierarchical allreduce is one call of its own.
      {{"BRAID_TRACE", KnobType::kString, "",
        "PREFIX: each communicator writes its calls (up to a million) as a Chrome / Perfetto trace to "
        "PREFIX.rankR.PID-N.json when it is destroyed; empty: off"},
       &Settings::trace},
      // Off: compression trades accuracy (about n * 2^-9 of the magnitudes summed) for bytes, the caller's choice.
      {{"BRAID_COMPRESS", KnobType::kString, "",
        "bf16: allreduces of float32 sums and averages between hosts carry bfloat16 on the wire (accumulated in "
        "float32; half the bytes, about 3 significant digits; other types, float16 and float8 included, travel as "
        "they are); empty: off"},
       &Settings::compress},
      // 16 MiB: at 10 Gbit/s a window takes ~13 ms around a two-rank ring against ~0.7 ms to copy it in from the
      // GPU, so the copies hide behind the transfers, and the pinned memory stays at 32 MiB per communicator.
      {{"BRAID_NET_STAGING_WINDOW", KnobType::kBytes, "16M",
        "GPU-buffer allreduces between hosts go around the ring in windows of this many bytes, each copied from "
        "and to the GPU while the one before travels (two windows of pinned memory); 0 copies whole buffers"},
       &Settings::netStagingWindowBytes},
      // host: measured ahead on the one-GPU H200 machine (2.07-2.38 GB/s against 1.35-1.74 with gpu, 1-256 MiB,
      // docs/BENCHMARKS.md), where the two ranks' reduction kernels take turns on the shared GPU, a launch and a
      // wait per 512 KiB segment. gpu copies in only 1/n of each window and leaves the cores to the sockets: the
      // choice for hosts short of cores, to be measured with a GPU per rank.
      {{"BRAID_NET_STAGING_REDUCE", KnobType::kString, "host",
        "where windowed GPU-buffer allreduces between hosts reduce: host (the CPU, on copies of the input) or gpu "
        "(the GPU reads its input in place and the received data from pinned memory)"},
       &Settings::netStagingReduce},
      {{"BRAID_HIERARCHY", KnobType::kString, "auto",
        "allreduce across hosts with several ranks each: auto (hierarchical from BRAID_HIERARCHY_MIN_BYTES), on "
        "(always), off (flat)"},
       &Settings::hierarchy},
      // 2M: measured on the namespace bed, 2 hosts x 2 ranks at 10 Gbit/s (docs/BENCHMARKS.md): flat 1.8x faster at
      // 1 MiB, hierarchical 1.6x at 4 MiB. The cost model crosses near 8 KiB there: it has no CPU contention, and
      // there 4 ranks shared 2 cores. Hosts with a core per rank should cross lower; a tune file can say so.
      {{"BRAID_HIERARCHY_MIN_BYTES", KnobType::kBytes, "2M",
        "allreduces across hosts of at least this many bytes per rank go hierarchical (BRAID_HIERARCHY=auto)"},
       &Settings::hierarchyMinBytes},
      // Empty: the boot id and the network namespace decide (transport/host_identity.cpp). As NCCL_HOSTID, for
      // trying a multi-host layout on one machine: ranks with different ids talk over TCP as if on two hosts.
      {{"BRAID_HOST_ID", KnobType::kString, "",
        "ranks of one machine with the same id count as one host (shared memory, GPU kernels between them), those "
        "with other ids as other hosts (TCP): a multi-host layout on one machine; empty: the machine decides"},
       &Settings::hostId},
      // Off: two event records per call cost ~1 us of the host's time, a fifth of a small call's.
      {{"BRAID_CUDA_TIMELINE", KnobType::kInt, "0",
        "1: time every GPU collective kernel between CUDA events and log (info) its GPU time and how long the "
        "GPU waited before it; for finding where a call's time goes"},
       &Settings::cudaTimeline},
      // 0: the selector's cost model places them; braid tune --mem device measures and writes both.
      {{"BRAID_CUDA_LL_MAX_BYTES", KnobType::kBytes, "0",
        "largest GPU allreduce the LL kernel takes (at most 512K); 0 lets braid's table choose"},
       &Settings::cudaLlMaxBytes},
      {{"BRAID_CUDA_ONESHOT_MAX_BYTES", KnobType::kBytes, "0",
        "largest GPU allreduce the one-shot kernel takes (two-shot above); 0 lets braid's table choose"},
       &Settings::cudaOneshotMaxBytes},
      // 512 KiB: below it the LL kernel runs, which registration does not change. Not yet measured against the
      // inbox kernels on NVLink (braid tune will say): peers' buffers are read with loads, whose NVLink ceiling
      // is ~8% below that of stores.
      {{"BRAID_CUDA_REGISTERED_MIN_BYTES", KnobType::kBytes, "512K",
        "smallest GPU allreduce, allgather or reduce_scatter that reads peers' registered buffers in place "
        "(Communicator::registerBuffer) instead of pushing through the workspace"},
       &Settings::cudaRegisteredMinBytes},
      // 32 KiB: a block of a one-shot kernel pushes its next chunk while it reduces the one before, so the link
      // and the reduction overlap; each chunk costs a flag (~1 us, hidden behind the chunk's ~6 us on the link).
      {{"BRAID_CUDA_CHUNK_BYTES", KnobType::kBytes, "32K",
        "bytes a block of a one-shot GPU allreduce pushes between two flags (pipelining); 0 pushes its whole piece"},
       &Settings::cudaChunkBytes},
      // `braid tune` writes KNOB=VALUE lines there; the environment still wins over them.
      {{"BRAID_TUNE_FILE", KnobType::kString, "",
        "measured knob values to use where the environment sets none (braid tune writes it); empty: "
        "~/.cache/braid/tune.env if it exists"},
       &Settings::tuneFile},
      {{"BRAID_CPU_ISA", KnobType::kString, "",
        "cap the CPU reduction kernels' instruction set: generic, avx2 or avx512; empty picks the best present"},
       &Settings::isa},
      {{"BRAID_DEBUG", KnobType::kString, "",
        "detail: before every collective each rank checks every other's call (a fingerprint exchange), so any "
        "mismatch fails on every rank; costs one message latency per call"},
       &Settings::debug},
      // Over shared memory the crossover depends on the rank count and the machine: unset, the selector's cost
      // model places it (tuning/selector.cpp); braid tune measures it for one machine. Over TCP, 64 KiB: below it
      // direct (or doubling) beats the ring, whose extra steps cost more than the bytes they save.
      {{"BRAID_DIRECT_MAX_BYTES", KnobType::kBytes, "64K",
        "largest message that host collectives move with the direct (one-round) algorithm; over shared memory, "
        "unset lets the cost model of this machine and rank count choose; over TCP the default applies"},
       &Settings::directMaxBytes},
      // The crossover moves with the rank count (and the machine): braid tune measures it for each count it runs.
      {{"BRAID_DIRECT_MAX_BYTES_BY_RANKS", KnobType::kString, "",
        "the crossover of BRAID_DIRECT_MAX_BYTES measured per count of local ranks, as RANKS:BYTES,... (braid tune "
        "writes it); over shared memory a rank count listed takes its own"},
       &Settings::directMaxBytesByRanks},
      // NCCL_SOCKET_IFNAME's syntax, so sites can reuse the value they already set for NCCL.
      // 1 s / 30 s: a beat costs a store of one word (shm) or one 88-byte frame per idle peer (TCP); 30 s leaves a
      // busy machine's stalls (swap, a long GC pause) alone while a stopped peer is named long before users give up.
      {{"BRAID_HEARTBEAT_INTERVAL", KnobType::kSeconds, "1",
        "seconds between a rank's heartbeats to its peers (0 turns heartbeats off)"},
       &Settings::heartbeatIntervalSeconds},
      {{"BRAID_HEARTBEAT_TIMEOUT", KnobType::kSeconds, "30",
        "seconds without a heartbeat after which a peer that has not exited (stopped, frozen, cut off) is PeerLost"},
       &Settings::heartbeatTimeoutSeconds},
      {{"BRAID_IFNAME", KnobType::kString, "",
        "network interfaces for TCP: comma list of name prefixes, '^' excludes, '=' exact names (e.g. ^=docker0,lo); "
        "empty skips loopback and container bridges unless nothing else is up"},
       &Settings::ifname},
      {{"BRAID_LOCAL_RANK", KnobType::kString, "", "this process's rank among the ranks of its host (optional)"},
       &Settings::localRank},
      {{"BRAID_LOG", KnobType::kString, "warn", "log level: error, warn, info, debug or trace"}, &Settings::logLevel},
      {{"BRAID_SHM_P2P_BYTES", KnobType::kBytes, "256K",
        "bytes of each shared-memory send/recv ring (one per ordered pair of local ranks); a larger message is read "
        "from the sender's memory in one copy where the kernel allows it"},
       &Settings::shmP2pBytes},
      // on: Open MPI's shared-memory transport reads large messages across processes the same way (its CMA).
      {{"BRAID_SHM_SINGLE_COPY", KnobType::kString, "on",
        "on: large messages and data-movement collectives over shared memory are read from the peer's memory in one "
        "copy where the kernel allows it (process_vm_readv); off: always through shared memory, in two"},
       &Settings::shmSingleCopy},
      // 0: by the rank count (tuning/shm_slot.cpp, and docs/BENCHMARKS.md's "Slot size by rank count"): 256 KiB for
      // 2 ranks, where 512 KiB and 1 MiB measured alike within the spread of two passes and 128 KiB slower.
      {{"BRAID_SHM_SLOT_BYTES", KnobType::kBytes, "0",
        "bytes each local rank exposes per collective round (two such slots, double-buffered), rounded up to whole "
        "4K pages; 0: 128K per local rank, at least 256K and at most 1M"},
       &Settings::shmSlotBytes},
      // auto: the core's L2. An output larger than that leaves this core's cache anyway; written with ordinary stores
      // each of its lines is first read from memory, so streaming it costs one pass where it cost two. Measured on
      // the 16-core H200 machine's host: a 4 MiB copy 16.4 GB/s streamed against 12.6 ordinary, 1 MiB 18.8
      // against 22.6 (then the output stays in cache).
      {{"BRAID_SHM_STREAM_BYTES", KnobType::kString, "auto",
        "calls over shared memory whose output is at least this many bytes write it with non-temporal stores: auto "
        "(the core's L2 cache, 1M when unknown), a byte count, or off"},
       &Settings::shmStreamBytes},
      // auto: each rank takes its share of the CPUs its host's ranks may use, so ranks bound a CPU each run alone and
      // ranks with CPUs to spare cut their large passes among them. One core moves a fraction of what the caches and
      // memory give: on the H100 machine's 16-core host, with the CPUs divided among the ranks, large allreduces ran
      // several times faster than on a CPU a rank at 2 ranks, about twice at 4 and a third faster at 8
      // (docs/BENCHMARKS.md, "helper threads"). Beside a program's own work the helpers cost it while they run, not
      // while idle: a 2-rank DDP step on CPU tensors was faster with 1, a 4-rank step with auto (same file, "DDP").
      {{"BRAID_SHM_THREADS", KnobType::kString, "auto",
        "threads each rank runs the copies and reductions of a large allreduce, reduce (rsag), reduce-scatter or "
        "allgather over shared memory on, itself included: a count from 1 to 256 (run on no more than the rank's "
        "CPUs), or auto (the CPUs this host's ranks may use, at most their cgroup's CPU quota, divided among them, at "
        "most 8, fewer where a group's slots would take more than half of /dev/shm)"},
       &Settings::shmThreads},
      // 100 us: several times the ~20 us a futex wake-up across cores costs, so a peer that is only a little late
      // is caught spinning, while a rank that waits longer stops burning its core.
      {{"BRAID_SPIN_US", KnobType::kInt, "100",
        "microseconds a waiting rank spins before it sleeps in the kernel (0 sleeps at once)"},
       &Settings::spinMicros},
      // 29517: clear of torchrun's default MASTER_PORT (29500) and of the MASTER_PORT + 1 braid takes under torchrun.
      {{"BRAID_PORT", KnobType::kInt, "29517",
        "TCP port rank 0's rendezvous listens on when the launcher names only hosts (srun); BRAID_ROOT_ADDR overrides"},
       &Settings::port},
      {{"BRAID_RANK", KnobType::kString, "", "this process's rank (set by the launcher)"}, &Settings::rank},
      {{"BRAID_ROOT_ADDR", KnobType::kString, "",
        "HOST:PORT where rank 0 serves the rendezvous; the other ranks connect there"},
       &Settings::rootAddr},
      // 2 streams: one TCP connection rarely fills a fast link (one core runs its kernel-side copies), and a
      // second lets a large message's frames travel while the first stream's are acknowledged.
      {{"BRAID_TCP_STREAMS", KnobType::kInt, "2",
        "TCP connections per pair of ranks; a message's frames spread over them"},
       &Settings::tcpStreams},
      // 4 MiB: a 10 Gbit/s link with 1 ms of round trip holds 1.25 MB in flight; 0 leaves the kernel's autotuning.
      {{"BRAID_TCP_BUFFER_BYTES", KnobType::kBytes, "4M",
        "SO_SNDBUF/SO_RCVBUF of each TCP stream (0 keeps the kernel's autotuning)"},
       &Settings::tcpBufferBytes},
      // 2000 us: a TCP message takes tens to hundreds of microseconds, and a caller that sleeps hands its sockets to
      // the progress thread at the cost of two wake-ups per message. Measured on the 2-core dev VM (2 ranks, 2 MiB
      // allreduce over loopback): 1470 us with 300 us of spin, 810-850 us with 1000-3000 us.
      {{"BRAID_TCP_SPIN_US", KnobType::kInt, "2000",
        "microseconds a rank waiting on TCP reads its sockets itself before it sleeps and leaves them to its progress "
        "thread"},
       &Settings::tcpSpinMicros},
      {{"BRAID_TIMEOUT", KnobType::kSeconds, "600",
        "seconds any blocking wait may last before it fails with Timeout naming the peers it waited for"},
       &Settings::timeoutSeconds},
      {{"BRAID_TOKEN", KnobType::kString, "",
        "shared secret of the job: the rendezvous refuses ranks that do not know it (braid run sets a fresh one)"},
       &Settings::token},
      // A file keeps the secret out of the environment other tools print; refused unless only its owner can read it.
      {{"BRAID_TOKEN_FILE", KnobType::kString, "",
        "file holding the job's shared secret (instead of BRAID_TOKEN); it must be a regular file of this user that "
        "no one else may read or write (chmod 600)"},
       &Settings::tokenFile},
      {{"BRAID_TRANSPORT", KnobType::kString, "auto",
        "transport between ranks: auto (shm among ranks of one host, else tcp), shm, or tcp (also on one host)"},
       &Settings::transport},
  };
  return kRows;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

[[noreturn]] void badValue(const KnobInfo& info, const std::string& text, const char* expected) {
  fail(ErrorCode::kInvalidArgument, {}, info.name, "='", text, "' is not ", expected, " (", info.doc, ")");
}

void assign(Settings& s, const KnobRow& row, const std::string& raw) {
  const std::string text = trim(raw);
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(s.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          s.*member = text;
        } else if constexpr (std::is_same_v<T, std::size_t>) {
          const auto v = parseBytes(text);
          if (!v) badValue(row.info, text, "a byte count (e.g. 4096, 64K, 1M)");
          s.*member = *v;
        } else if constexpr (std::is_same_v<T, double>) {
          char* end = nullptr;
          errno = 0;
          const double v = std::strtod(text.c_str(), &end);
          if (text.empty() || *end != '\0' || errno != 0 || !(v > 0)) badValue(row.info, text, "a positive number");
          s.*member = v;
        } else {
          char* end = nullptr;
          errno = 0;
          const long v = std::strtol(text.c_str(), &end, 10);
          if (text.empty() || *end != '\0' || errno != 0 || v < 0) badValue(row.info, text, "a non-negative integer");
          s.*member = v;
        }
      },
      row.field);
}

}  // namespace

std::optional<std::size_t> parseBytes(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return std::nullopt;
  std::string suffix(end);
  std::transform(suffix.begin(), suffix.end(), suffix.begin(), [](unsigned char c) { return std::toupper(c); });
  if (!suffix.empty() && suffix.back() == 'B') suffix.pop_back();
  if (suffix.size() == 2 && suffix[1] == 'I') suffix.pop_back();  // KiB, MiB, GiB
  unsigned shift = 0;
  if (suffix == "K")
    shift = 10;
  else if (suffix == "M")
    shift = 20;
  else if (suffix == "G")
    shift = 30;
  else if (!suffix.empty())
    return std::nullopt;
  if (shift && v > (~0ull >> shift)) return std::nullopt;
  return static_cast<std::size_t>(v << shift);
}

namespace {

// The tune file: KNOB=VALUE lines (an "export " before them and # comments are allowed), knobs only.
std::map<std::string, std::string> readTuneFile(const std::string& path) {
  std::map<std::string, std::string> values;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("export ", 0) == 0) line.erase(0, 7);
    const auto eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') value = value.substr(1, value.size() - 2);
    values[line.substr(0, eq)] = value;
  }
  return values;
}

}  // namespace

namespace {

// The secret in `path`, trailing whitespace dropped. Refused, naming why, unless it is a regular file owned by this
// user that no one else can read or write: a secret others can read is no secret, and ssh refuses keys alike.
std::string readSecretFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) fail(ErrorCode::kInvalidArgument, {}, "BRAID_TOKEN_FILE=", path, ": ", std::strerror(errno));
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    why = strCat("owned by uid ", st.st_uid, ", not by this user (uid ", ::geteuid(), ")");
  } else if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    why = strCat("others than its owner may read or write it (mode ", mode, "): chmod 600 ", path);
  }
  std::string secret;
  if (why.empty()) {
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::read(fd, buf, sizeof buf)) > 0 && secret.size() < (64u << 10)) secret.append(buf, buf + n);
    if (n < 0) why = std::strerror(errno);
  }
  ::close(fd);
  if (!why.empty()) fail(ErrorCode::kInvalidArgument, {}, "BRAID_TOKEN_FILE=", path, " refused: ", why);
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) secret.pop_back();
  if (secret.empty()) fail(ErrorCode::kInvalidArgument, {}, "BRAID_TOKEN_FILE=", path, " is empty");
  return secret;
}

}  // namespace

Settings Settings::fromEnvironment(const Lookup& lookup) {
  auto get = [&](const std::string& name) -> std::optional<std::string> {
    if (lookup) return lookup(name);
    if (const char* env = std::getenv(name.c_str())) return std::string(env);
    return std::nullopt;
  };
  // Which tune file: the knob's, else (for the real environment only, so that tests stay hermetic) the default.
  const std::string tunePath = lookup ? get("BRAID_TUNE_FILE").value_or("") : tuneFilePath();
  const auto tuned = tunePath.empty() ? std::map<std::string, std::string>{} : readTuneFile(tunePath);
  Settings s;
  for (const auto& row : rows()) {
    std::optional<std::string> value = get(row.info.name);
    if (!value) {
      if (const auto it = tuned.find(row.info.name); it != tuned.end()) {
        value = it->second;
        s.tuned += (s.tuned.empty() ? "" : ", ") + row.info.name + "=" + it->second;
      }
    }
    if (value) s.givenKnobs.push_back(row.info.name);
    assign(s, row, value.value_or(row.info.defaultValue));
  }
  if (!s.tuned.empty()) s.tuned += " from " + tunePath;
  if (!s.tokenFile.empty()) {
    if (!s.token.empty()) {
      fail(ErrorCode::kInvalidArgument, {}, "BRAID_TOKEN and BRAID_TOKEN_FILE are both set: set one of them");
    }
    s.token = readSecretFile(s.tokenFile);
  }
  return s;
}

bool Settings::given(const std::string& name) const {
  return std::find(givenKnobs.begin(), givenKnobs.end(), name) != givenKnobs.end();
}

std::string tuneFilePath() {
  if (const char* path = std::getenv("BRAID_TUNE_FILE"); path != nullptr && *path != '\0') return path;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/braid/tune.env";
  return "";
}

std::string tunedKnobs() { return Settings::fromEnvironment().tuned; }

std::string knobValue(const std::string& name) {
  const auto& all = rows();
  const auto row = std::find_if(all.begin(), all.end(), [&](const auto& r) { return r.info.name == name; });
  if (row == all.end()) fail(ErrorCode::kInvalidArgument, {}, name, " is not one of braid's knobs (braid env --knobs)");
  // Trimmed, as Settings reads every value.
  if (const char* env = std::getenv(name.c_str())) return trim(env);
  if (const std::string path = tuneFilePath(); !path.empty()) {
    const auto tuned = readTuneFile(path);
    if (const auto it = tuned.find(name); it != tuned.end()) return trim(it->second);
  }
  return row->info.defaultValue;
}

const std::vector<KnobInfo>& allKnobs() {
  static const std::vector<KnobInfo> kInfos = [] {
    std::vector<KnobInfo> out;
    for (const auto& row : rows()) out.push_back(row.info);
    std::sort(out.begin(), out.end(), [](const KnobInfo& a, const KnobInfo& b) { return a.name < b.name; });
    return out;
  }();
  return kInfos;
}

const char* knobTypeName(KnobType type) {
  switch (type) {
    case KnobType::kInt:
      return "int";
    case KnobType::kBytes:
      return "bytes";
    case KnobType::kSeconds:
      return "seconds";
    case KnobType::kString:
      return "string";
    case KnobType::kBool:
      return "bool";
  }
  return "?";
}

}  // namespace braid
