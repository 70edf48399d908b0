// braid-bench-device: collectives on GPU buffers, braid and NCCL side by side in one run with one method
// (nccl-tests'): rank r of N is a process on GPU r % GPUs; per size, warm-up calls, then --reps loops of -n
// back-to-back calls on one stream timed with CUDA events, the slowest rank's time per call, the median loop.
// NCCL is libnccl.so.2 loaded at run time (BRAID_NCCL_LIBRARY, the loader's path, the CUDA toolkit or the torch
// wheel), so braid builds and runs where there is none. Results are checked exactly after the timed loops.
//
// With --threads the ranks are threads of one process instead (rows named impl+threads). With --netns PREFIX rank r
// runs in network namespace PREFIX-nsR (scripts/netns-bed.sh's bed) as a host of its own, both libraries on its eth0.
//
// Usage: braid-bench-device [driver flags, see braid-bench-mpi --help] --nranks N [--impl braid,nccl] [--graph]
//        [--register] [--threads] [--hosts-apart] [--netns PREFIX]
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_json.hpp"
#include "bench/device_calls.hpp"
#include "bench/driver_args.hpp"
#include "bench/empty_launch.hpp"
#include "bench/machine_info.hpp"
#include "bench/nccl_loader.hpp"
#include "bench/provenance.hpp"
#include "braid/braid.hpp"
#include "braid/elements.hpp"
#include "braid/topology.hpp"

namespace {

constexpr const char* kProgram = "braid-bench-device";
using braid::bench::Call;
using braid::bench::check;
using braid::bench::checkNccl;
using braid::bench::loadNccl;
using braid::bench::Nccl;
using braid::bench::ncclComm_t;
using braid::bench::ncclOp;
using braid::bench::ncclResult_t;
using braid::bench::ncclSettings;
using braid::bench::ncclType;
using braid::bench::ncclUniqueId;
using braid::bench::ncclVersionText;
using braid::bench::Setup;
using braid::tools::BenchOptions;
using braid::tools::BenchRow;

// nccl-tests' loops, timed on the stream with events; the slowest rank's time per call of the median loop. With
// `graph`, the loop of calls is captured once into a CUDA graph and each repetition launches it: what the kernels
// cost without the host's per-call work. `issueUs` gets the host's time per call of the median loop (how long a
// call takes to return), which bounds the stream rows from below when the GPU waits for the host.
struct Timing {
  double seconds = 0;
  double issueUs = 0;
};

Timing timeCalls(const BenchOptions& o, const Call& call, cudaStream_t stream, braid::Communicator& host, bool graph) {
  for (int i = 0; i < o.warmup; ++i) call(stream);
  check(cudaStreamSynchronize(stream), "warm-up");
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaGraph_t g = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    for (int i = 0; i < o.iterations; ++i) call(stream);
    check(cudaStreamEndCapture(stream, &g), "cudaStreamEndCapture");
    check(cudaGraphInstantiate(&exec, g, 0), "cudaGraphInstantiate");
    check(cudaGraphDestroy(g), "cudaGraphDestroy");
    check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch (warm-up)");
    check(cudaStreamSynchronize(stream), "graph warm-up");
  }
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  std::vector<std::pair<double, double>> loops;  // (seconds per call, host microseconds per call)
  for (int rep = 0; rep < std::max(o.repetitions, 3); ++rep) {
    host.barrier();
    check(cudaEventRecord(start, stream), "record");
    const auto t0 = std::chrono::steady_clock::now();
    if (exec != nullptr) {
      check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    } else {
      for (int i = 0; i < o.iterations; ++i) call(stream);
    }
    const double issue = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                         std::max(o.iterations, 1);
    check(cudaEventRecord(stop, stream), "record");
    check(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    double seconds = ms / 1e3 / std::max(o.iterations, 1);
    host.allreduce(&seconds, &seconds, 1, braid::DataType::kFloat64, braid::ReduceKind::kMax);
    loops.emplace_back(seconds, issue);
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  if (exec != nullptr) check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  std::sort(loops.begin(), loops.end());
  const auto& median = loops[loops.size() / 2];
  return {median.first, median.second};
}

// What joins the GPUs of ranks 0..n-1 (rank r on GPU r % gpus), from the driver: NVLink, PCIe peer to peer, or
// neither; "one GPU" when every rank shares GPU 0.
std::string gpuLink(int n, int gpus) {
  const int used = std::min(n, gpus);
  if (n == 1) return "one rank on one GPU";
  if (used < 2) return "one GPU shared by " + std::to_string(n) + " ranks";
  const braid::topology::Topology t = braid::topology::detect();
  bool nvlink = true, p2p = true;
  int links = 0;
  for (int a = 0; a < used; ++a) {
    for (int b = a + 1; b < used; ++b) {
      const braid::topology::GpuPair* pair = t.pair(a, b);
      nvlink = nvlink && pair != nullptr && pair->nvlink;
      p2p = p2p && pair != nullptr && pair->p2p;
      if (pair != nullptr && pair->nvlink) links = links == 0 ? pair->nvlinks : std::min(links, pair->nvlinks);
    }
  }
  std::string text = std::to_string(used) + " GPUs ";
  if (nvlink) return text + "joined by NVLink" + (links > 0 ? " (" + std::to_string(links) + " links)" : "");
  return text + (p2p ? "joined by PCIe, peer to peer" : "joined by PCIe through host memory (no peer access)");
}

// What joined the ranks in this run: the GPUs' own link, braid's path as its device engine chose it, and NCCL's
// (its own choice, under the NCCL_* settings in force).
std::string deviceLink(braid::Communicator& comm, int n, int gpus, bool withNccl) {
  std::string link = gpuLink(n, gpus);
  // Made by braid's first call on device memory: none when only NCCL ran.
  if (const std::string transport = comm.transportName(braid::Memory::kDevice); !transport.empty()) {
    // The largest and the smallest call's path: processes sharing a GPU stage their small allreduces.
    const std::string largest = comm.allreduceAlgorithm(std::size_t{1} << 30, braid::Memory::kDevice);
    const bool shared =
        largest == "cuda_ipc/shared" || largest == "cuda_ipc/shared_in_place" || largest == "cuda_ipc/leader";
    const bool stagedSmall = comm.allreduceAlgorithm(8, braid::Memory::kDevice).rfind("staged", 0) == 0;
    link += std::string("; braid: ") +
            (shared ? std::string(stagedSmall ? "small allreduces staged through host memory, larger ones on " : "") +
                          (largest == "cuda_ipc/shared_in_place"
                               ? "the shared-GPU path of one context (each rank's buffers read in place, streams "
                                 "ordered by events, host meetings over shared memory)"
                           : largest == "cuda_ipc/leader"
                               ? "the leader path (rank 0 maps every rank's buffers by CUDA IPC and does each "
                                 "call's GPU work; the other processes' streams only wait; a host meeting per call)"
                               : "the shared-GPU path (copies into CUDA IPC workspaces, host meetings over shared "
                                 "memory, local reductions)")
             : transport == "cuda_ipc" ? "CUDA IPC (the GPUs read and write each other's memory)"
                                       : "device buffers staged through host memory, " + comm.linkDescription());
  }
  if (withNccl) {
    const std::string settings = ncclSettings();
    link += "; NCCL: its own choice of transport" + (settings.empty() ? "" : " under " + settings);
  }
  return link;
}

struct Modes {
  bool graphs = false;      // also rows replayed from a CUDA graph
  bool registered = false;  // buffers registered with both libraries
  bool threads = false;     // ranks are threads of one process
  bool hostsApart = false;  // every rank its own host id: ranks sharing a GPU meet over TCP, NCCL's included
  std::string netns;        // rank r in network namespace netns-nsR (implies hostsApart)
};

// Both libraries' ids, as rank 0 makes them and hands them to the others.
struct Ids {
  braid::UniqueId braid;
  ncclUniqueId nccl;
};

// Moves this process into network namespace `name` (ip netns's /var/run/netns/NAME); needs CAP_SYS_ADMIN.
void enterNamespace(const std::string& name) {
  const std::string path = "/var/run/netns/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("no network namespace " + path + " (scripts/netns-bed.sh up)");
  const int rc = ::setns(fd, CLONE_NEWNET);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("setns(" + path + ") failed: " + std::strerror(errno));
}

int runRank(const braid::UniqueId& id, const ncclUniqueId& ncclId, int n, int me, int gpus,
            const braid::bench::DriverArgs& args, const std::vector<std::string>& impls, Modes modes,
            const std::string& command, const std::string& started) {
  const bool graphs = modes.graphs, registered = modes.registered;
  check(cudaSetDevice(me % gpus), "cudaSetDevice");
  auto comm = braid::Communicator::create(id, me, n);
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  // Timed here, in the same run and on the same stream kind as the calls: the floor of their host cost.
  const double emptyLaunchUs = braid::bench::emptyLaunchMicros(stream, 5000);
  const BenchOptions& o = args.options;
  const auto sizes = braid::bench::driverSizes(o, n);
  const std::size_t esz = braid::bench::dtypeBytes(o.dtype);
  const std::size_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  Setup s;
  s.o = o;
  s.n = n;
  s.me = me;
  check(cudaMalloc(reinterpret_cast<void**>(&s.send), largest + 256), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&s.recv), largest + 256), "cudaMalloc");
  Nccl nccl;
  ncclComm_t ncomm = nullptr;
  std::vector<BenchRow> rows;
  // --register: both libraries get the two buffers registered (braid's registerBuffer, ncclCommRegister).
  std::vector<braid::BufferRegistration> braidRegistrations;
  if (registered) {
    for (std::byte* b : {s.send, s.recv}) braidRegistrations.push_back(comm->registerBuffer(b, largest + 256));
  }
  std::vector<void*> ncclRegistrations;
  for (const auto& impl : impls) {
    if (impl == "nccl") {
      nccl = loadNccl();
      checkNccl(nccl, nccl.commInitRank(&ncomm, n, ncclId, me), "ncclCommInitRank");
      for (std::byte* b : registered ? std::vector<std::byte*>{s.send, s.recv} : std::vector<std::byte*>{}) {
        void* handle = nullptr;
        checkNccl(nccl, nccl.commRegister(ncomm, b, largest + 256, &handle), "ncclCommRegister");
        ncclRegistrations.push_back(handle);
      }
    }
    for (std::size_t bytes : sizes) {
      s.count = bytes / esz;
      const Call call = impl == "nccl"     ? ncclCall(nccl, ncomm, s)
                        : impl == "memcpy" ? memcpyCall(s)
                                           : braidCall(*comm, s);
      for (const bool graph : {false, true}) {
        if (graph && !graphs) continue;
        fill(s, stream);
        const Timing timing = timeCalls(o, call, stream, *comm, graph);
        long wrong = -1;
        if (o.check && impl != "memcpy") {
          fill(s, stream);
          call(stream);
          wrong = wrongElements(s, stream);
          comm->allreduce(&wrong, &wrong, 1, braid::DataType::kInt64, braid::ReduceKind::kSum);
        }
        const std::string name =
            impl + (modes.threads ? "+threads" : "") + (registered ? "+reg" : "") + (graph ? "+graph" : "");
        BenchRow row = braid::bench::makeRow(name, o, n, bytes, {timing.seconds, o.iterations}, wrong);
        row.mem = "device";
        if (!graph) {
          row.issueUs = timing.issueUs;
          row.emptyLaunchUs = emptyLaunchUs;
        }
        if (me == 0) {
          braid::bench::printRow(row);
          if (!graph) {
            std::printf("#   %s issues a call in %.2f us on the host; an empty kernel launches in %.2f us (%.2fx)\n",
                        impl.c_str(), timing.issueUs, emptyLaunchUs, timing.issueUs / emptyLaunchUs);
          }
        }
        rows.push_back(row);
      }
    }
    for (void* handle : ncclRegistrations) checkNccl(nccl, nccl.commDeregister(ncomm, handle), "ncclCommDeregister");
    ncclRegistrations.clear();
    if (ncomm) checkNccl(nccl, nccl.commDestroy(ncomm), "ncclCommDestroy");
    ncomm = nullptr;
  }
  if (me == 0 && !args.jsonPath.empty()) {
    std::map<std::string, std::string> peers;
    int version = 0;
    if (!nccl.path.empty()) {
      checkNccl(nccl, nccl.getVersion(&version), "ncclGetVersion");
      peers["nccl"] = ncclVersionText(version);
    }
    if (std::find(impls.begin(), impls.end(), "memcpy") != impls.end()) {
      int runtime = 0;
      check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
      peers["memcpy"] =
          "cudaMemcpyAsync, CUDA runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
    }
    // This rank is a child with its own CUDA context: asking the driver for the GPUs here is safe.
    nlohmann::json meta = braid::tools::provenanceMeta(command, started, braid::tools::machineInfo(),
                                                       deviceLink(*comm, n, gpus, !nccl.path.empty()), peers);
    std::string implList;
    for (const auto& impl : impls) implList += (implList.empty() ? "" : "+") + impl;
    meta["impl"] = implList;
    meta["mem"] = "device";
    meta["ranks_are"] = modes.threads ? "threads of one process" : "processes";
    if (modes.hostsApart)
      meta["hosts_apart"] = "each rank its own BRAID_HOST_ID and NCCL_HOSTID (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)";
    if (!modes.netns.empty()) {
      meta["netns"] = "rank r in network namespace " + modes.netns +
                      "-nsR (scripts/netns-bed.sh), BRAID_IFNAME=eth0 NCCL_SOCKET_IFNAME=eth0";
    }
    if (!nccl.path.empty()) {
      meta["nccl_library"] = nccl.path;
      if (nccl.isBraid) meta["nccl_is_braid"] = "NCCL's API on braid (nccl/): the nccl rows are braid through it";
      meta["nccl_version"] = version;
    }
    braid::tools::writeResults(args.jsonPath, meta, rows);
  }
  for (const auto& r : braidRegistrations) comm->deregisterBuffer(r);
  const auto asyncError = comm->asyncError();
  if (asyncError) throw *asyncError;
  return 0;
}

// --threads: one child process (this one must stay free of CUDA) whose threads are the ranks.
int runThreadRanks(int n, int gpus, const braid::bench::DriverArgs& args, const std::vector<std::string>& impls,
                   Modes modes, const std::string& command, const std::string& started, bool withNccl) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int failed = 0;
    try {
      const braid::UniqueId id = braid::Communicator::uniqueId();
      ncclUniqueId ncclId{};
      if (withNccl) {
        Nccl nc = loadNccl();
        checkNccl(nc, nc.getUniqueId(&ncclId), "ncclGetUniqueId");
      }
      std::vector<int> rcs(static_cast<std::size_t>(n), 1);
      std::vector<std::thread> threads;
      for (int r = 0; r < n; ++r) {
        threads.emplace_back([&, r] {
          try {
            rcs[static_cast<std::size_t>(r)] = runRank(id, ncclId, n, r, gpus, args, impls, modes, command, started);
          } catch (const std::exception& e) {
            std::fprintf(stderr, "%s: rank %d (a thread): %s\n", kProgram, r, e.what());
          }
        });
      }
      for (auto& t : threads) t.join();
      for (int rc : rcs) failed += rc != 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
      failed = 1;
    }
    std::fflush(stdout);
    ::_exit(failed == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string started = braid::tools::isoNow();
  const std::string command = braid::tools::shellCommand(std::vector<std::string>(argv, argv + argc));
  int n = 0;  // 0: one rank per GPU
  std::vector<std::string> impls = {"braid", "nccl"};
  Modes modes;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--nranks" && i + 1 < argc) {
      n = std::atoi(argv[++i]);
    } else if (a == "--graph") {
      modes.graphs = true;
    } else if (a == "--register") {
      modes.registered = true;
    } else if (a == "--threads") {
      modes.threads = true;
    } else if (a == "--hosts-apart") {
      modes.hostsApart = true;
    } else if (a == "--netns" && i + 1 < argc) {
      modes.netns = argv[++i];
      modes.hostsApart = true;
    } else if (a == "--impl" && i + 1 < argc) {
      impls.clear();
      std::string list = argv[++i];
      for (std::size_t p = 0; p <= list.size();) {
        const std::size_t c = list.find(',', p);
        impls.push_back(list.substr(p, c == std::string::npos ? std::string::npos : c - p));
        if (c == std::string::npos) break;
        p = c + 1;
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  braid::bench::DriverArgs args;
  try {
    args = braid::bench::parseDriverArgs(static_cast<int>(rest.size()), rest.data());
    if (args.options.dtype != "float32" && args.options.dtype != "bfloat16" && args.options.dtype != "float16" &&
        args.options.dtype != "float64" && args.options.dtype != "int32") {
      throw std::invalid_argument("dtype " + args.options.dtype + " (float32, bfloat16, float16, float64, int32)");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n%s", kProgram, e.what(), braid::bench::driverUsage(kProgram).c_str());
    return 2;
  }
  if (args.help) {
    std::printf(
        "%s  plus --nranks N --impl braid,nccl --graph (rows of the same calls replayed from a CUDA graph) --register "
        "(both libraries register the buffers: registerBuffer, ncclCommRegister); --impl memcpy: rank 0's "
        "device-to-device cudaMemcpyAsync of each size, the reference on one GPU; --threads (the ranks are threads of "
        "one process, not processes); --hosts-apart (each rank its own host id, to braid and to NCCL: ranks that "
        "share a GPU meet over TCP, which is how NCCL runs them); --netns PREFIX (rank r in network namespace "
        "PREFIX-nsR of scripts/netns-bed.sh, a host of its own, both libraries on its eth0)\n",
        braid::bench::driverUsage(kProgram).c_str());
    return 0;
  }
  // The GPU count, asked in a child: this process forks the ranks and must not hold a CUDA context itself.
  int gpus = 0;
  {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int c = 0;
      ::_exit(cudaGetDeviceCount(&c) == cudaSuccess ? std::min(c, 100) : 0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    gpus = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  }
  if (gpus == 0) {
    std::fprintf(stderr, "%s: no CUDA device\n", kProgram);
    return 1;
  }
  if (n <= 0) n = gpus;
  for (const auto& impl : impls) {
    if (impl != "braid" && impl != "nccl" && impl != "memcpy") {
      std::fprintf(stderr, "%s: --impl %s: not braid, nccl or memcpy (rank 0's device-to-device copy)\n", kProgram,
                   impl.c_str());
      return 2;
    }
  }
  const bool withNccl = std::find(impls.begin(), impls.end(), "nccl") != impls.end();
  // braid's libnccl.so.2 (BRAID_NCCL_LIBRARY): NCCL's API on braid, which runs ranks that share a GPU; dlopen alone
  // makes no CUDA context here.
  const bool ncclIsBraid = withNccl && [] {
    try {
      return loadNccl().isBraid;
    } catch (const std::exception&) {
      return false;
    }
  }();
  if (withNccl && n > gpus && !modes.hostsApart && !ncclIsBraid) {
    std::fprintf(
        stderr,
        "%s: NCCL refuses two ranks on one GPU of a host (%d ranks, %d GPU(s)): --impl braid, or --hosts-apart\n",
        kProgram, n, gpus);
    return 2;
  }
  if (modes.threads && modes.hostsApart) {
    std::fprintf(stderr, "%s: --hosts-apart needs process ranks (a host id is a process's environment)\n", kProgram);
    return 2;
  }
  if (modes.threads) return runThreadRanks(n, gpus, args, impls, modes, command, started, withNccl);
  // NCCL's id names the bootstrap root that ncclGetUniqueId starts in its caller, and in namespaces braid's names
  // an address of rank 0's namespace: rank 0 makes them and hands them to the others through pipes.
  std::vector<std::array<int, 2>> pipes(static_cast<std::size_t>(n));
  for (auto& p : pipes) {
    if (::pipe(p.data()) != 0) return 1;
  }
  if (args.options.minBytes == 0) args.options.minBytes = 8;
  std::printf("# %s: %d ranks on %d GPU(s), %s %s %s\n", kProgram, n, gpus, args.options.collective.c_str(),
              args.options.dtype.c_str(), args.options.op.c_str());
  std::fflush(stdout);
  const braid::UniqueId id = braid::Communicator::uniqueId();
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int rc = 1;
      if (!modes.netns.empty()) {
        try {
          enterNamespace(modes.netns + "-ns" + std::to_string(r));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s: rank %d: %s\n", kProgram, r, e.what());
          ::_exit(1);
        }
        ::setenv("BRAID_IFNAME", "eth0", 1);
        ::setenv("NCCL_SOCKET_IFNAME", "eth0", 1);
      }
      if (modes.hostsApart) {
        // Each rank a host of its own to both libraries. NCCL checks for duplicate GPUs among the ranks of one
        // host only, so it then runs ranks that share a GPU, over its socket transport (no P2P, no shared memory).
        const std::string host = "bench-host-" + std::to_string(r);
        ::setenv("BRAID_HOST_ID", host.c_str(), 1);
        ::setenv("NCCL_HOSTID", host.c_str(), 1);
        ::setenv("NCCL_P2P_DISABLE", "1", 1);
        ::setenv("NCCL_SHM_DISABLE", "1", 1);
      }
      try {
        Ids ids{id, {}};
        const bool handed = withNccl || !modes.netns.empty();
        if (handed && r == 0) {
          if (!modes.netns.empty()) ids.braid = braid::Communicator::uniqueId();
          if (withNccl) {
            Nccl nc = loadNccl();
            checkNccl(nc, nc.getUniqueId(&ids.nccl), "ncclGetUniqueId");
          }
          for (int q = 1; q < n; ++q) {
            if (::write(pipes[q][1], &ids, sizeof ids) != static_cast<ssize_t>(sizeof ids)) {
              throw std::runtime_error("cannot pass the ids");
            }
          }
        } else if (handed) {
          if (::read(pipes[r][0], &ids, sizeof ids) != static_cast<ssize_t>(sizeof ids)) {
            throw std::runtime_error("no ids from rank 0");
          }
        }
        rc = runRank(ids.braid, ids.nccl, n, r, gpus, args, impls, modes, command, started);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: rank %d: %s\n", kProgram, r, e.what());
      }
      std::fflush(stdout);
      ::_exit(rc);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failed == 0 ? 0 : 1;
}
