// braid-bench-mpi: one rank of `braid bench --compare mpi`, the same sweep and method as braid's own, through
// MPI's collectives. Started under mpirun by runPeer() (tools/bench/peers.cpp), or by hand:
//   mpirun -n 2 --bind-to none braid-bench-mpi --collective allreduce -b 8 -e 64M
// MPI has no standard half type, so float16 is refused rather than measured through some vendor extension.
#define OMPI_SKIP_MPICXX 1  // the C API only: no deprecated C++ bindings dragged in
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_json.hpp"
#include "bench/driver_args.hpp"
#include "bench/machine_info.hpp"
#include "bench/provenance.hpp"
#include "bench/rank_cpus.hpp"

namespace braid::bench {

namespace {

using tools::BenchOptions;
using tools::BenchRow;

constexpr const char* kProgram = "braid-bench-mpi";

MPI_Op mpiOp(const std::string& op) {
  if (op == "prod") return MPI_PROD;
  if (op == "min") return MPI_MIN;
  if (op == "max") return MPI_MAX;
  return MPI_SUM;
}

void requireMpiCan(const BenchOptions& o, int ranks) {
  requireSupported("mpi", o, ranks, {"float32", "float64", "int32"});
  const std::size_t esz = dtypeBytes(o.dtype);
  if (o.maxBytes / esz > static_cast<std::size_t>(INT_MAX)) {
    // MPI-3 counts are ints; the _c (MPI-4) forms are not in Open MPI 4.
    throw std::invalid_argument("mpi: -e " + std::to_string(o.maxBytes) + " is more than INT_MAX elements of " +
                                o.dtype + ", the most one MPI call can count");
  }
}

// One size: the call on fixed buffers, and where this rank's result is left.
struct Plan {
  std::function<void()> call;
  const void* out = nullptr;
};

template <typename T>
Plan plan(const BenchOptions& o, MPI_Datatype type, int n, int me, std::size_t count, T* send, T* recv) {
  const std::string& c = o.collective;
  const int block = static_cast<int>(overBlocks(c) ? count / static_cast<std::size_t>(n) : count);
  const int cnt = static_cast<int>(count);
  const int root = o.root;
  const MPI_Op op = mpiOp(o.op);
  const MPI_Comm comm = MPI_COMM_WORLD;
  const bool inplace = o.inplace;
  Plan p;
  p.out = recv;
  if (c == "allreduce") {
    const void* in = inplace ? MPI_IN_PLACE : send;
    p.call = [=] { MPI_Allreduce(in, recv, cnt, type, op, comm); };
  } else if (c == "reduce") {
    // In place, the root names MPI_IN_PLACE; the other ranks' input is their (only) buffer.
    const void* in = inplace ? (me == root ? MPI_IN_PLACE : recv) : send;
    p.call = [=] { MPI_Reduce(in, recv, cnt, type, op, root, comm); };
  } else if (c == "reducescatter") {
    const void* in = inplace ? MPI_IN_PLACE : send;
    p.call = [=] { MPI_Reduce_scatter_block(in, recv, block, type, op, comm); };
  } else if (c == "allgather") {
    if (inplace) {
      p.call = [=] { MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, block, type, comm); };
    } else {
      p.call = [=] { MPI_Allgather(send, block, type, recv, block, type, comm); };
    }
  } else if (c == "gather") {
    const void* in = inplace && me == root ? MPI_IN_PLACE : send;
    p.call = [=] { MPI_Gather(in, block, type, recv, block, type, root, comm); };
  } else if (c == "broadcast") {
    p.call = [=] { MPI_Bcast(recv, cnt, type, root, comm); };
  } else if (c == "scatter") {
    if (inplace && me == root) {
      p.call = [=] { MPI_Scatter(send, block, type, MPI_IN_PLACE, block, type, root, comm); };
      p.out = send + static_cast<std::size_t>(root) * static_cast<std::size_t>(block);
    } else {
      p.call = [=] { MPI_Scatter(send, block, type, recv, block, type, root, comm); };
    }
  } else if (c == "alltoall") {
    if (inplace) {
      p.call = [=] { MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, block, type, comm); };
    } else {
      p.call = [=] { MPI_Alltoall(send, block, type, recv, block, type, comm); };
    }
  } else if (c == "sendrecv") {
    // The ring shift of nccl-tests' sendrecv: send to the next rank, receive from the previous one.
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    if (inplace) {
      p.call = [=] { MPI_Sendrecv_replace(recv, cnt, type, next, 0, prev, 0, comm, MPI_STATUS_IGNORE); };
    } else {
      p.call = [=] { MPI_Sendrecv(send, cnt, type, next, 0, recv, cnt, type, prev, 0, comm, MPI_STATUS_IGNORE); };
    }
  } else {
    throw std::invalid_argument("mpi: no driver for collective '" + c + "'");
  }
  return p;
}

template <typename T>
std::vector<BenchRow> runSweep(const BenchOptions& o, MPI_Datatype type, int n, int me) {
  const std::vector<std::size_t> sizes = driverSizes(o, n);
  const std::size_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end()) / sizeof(T);
  // Allocated and touched once, as braid's sweep does, so that no size pays first-touch page faults when timed.
  std::vector<T> send(largest + 1), recv(largest + 1);
  auto conv = [](double v) { return static_cast<T>(v); };
  auto barrier = [] { MPI_Barrier(MPI_COMM_WORLD); };
  auto maxOverRanks = [](double s) {
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return s;
  };
  std::vector<BenchRow> rows;
  for (const std::size_t bytes : sizes) {
    const std::size_t count = bytes / sizeof(T);
    Plan p = plan<T>(o, type, n, me, count, send.data(), recv.data());
    fillSize(o, n, me, count, send.data(), recv.data(), conv);
    const tools::LoopTiming timing = tools::timeLoops(o, p.call, barrier, maxOverRanks);
    long wrong = -1;
    if (o.check) {
      fillSize(o, n, me, count, send.data(), recv.data(), conv);  // fresh inputs: in place, the loops changed them
      p.call();
      int64_t mine = countWrong(o, n, me, count, static_cast<const T*>(p.out), conv);
      MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      wrong = static_cast<long>(mine);
    }
    rows.push_back(makeRow("mpi", o, n, bytes, timing, wrong));
    if (me == 0) printRow(rows.back());
  }
  return rows;
}

std::string libraryVersion() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string v(text, static_cast<std::size_t>(std::max(len, 0)));
  const auto end = v.find_first_of(",\n");  // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
  return end == std::string::npos ? v : v.substr(0, end);
}

// What joined the ranks, as mpirun was told: it hands its --mca settings to the ranks as OMPI_MCA_* variables.
std::string btlDescription() {
  const char* btl = std::getenv("OMPI_MCA_btl");
  if (btl == nullptr || *btl == '\0') return "Open MPI, the transports it chose itself (no --mca btl)";
  std::string text = std::string("Open MPI btl ") + btl;
  if (const char* ifs = std::getenv("OMPI_MCA_btl_tcp_if_include"); ifs && *ifs) text += std::string(" on ") + ifs;
  return text;
}

// The rank as the launcher tells it, for messages before MPI_Init (Open MPI, MPICH/Hydra, Slurm).
int launcherRank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

// INT_MAX where no launcher says: the root is checked again against MPI's own size after MPI_Init.
int launcherSize() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return INT_MAX;
}

}  // namespace

}  // namespace braid::bench

int main(int argc, char** argv) {
  using namespace braid::bench;
  const std::string started = braid::tools::isoNow();
  // Flags and what MPI can run are checked before MPI_Init, so that a refusal is one clean message (from the first
  // rank) and an exit status, not an MPI abort.
  DriverArgs args;
  try {
    args = parseDriverArgs(argc, argv);
    if (args.help) {
      std::fputs(driverUsage(kProgram).c_str(), stdout);
      return 0;
    }
    requireMpiCan(args.options, launcherSize());
  } catch (const std::exception& e) {
    if (launcherRank() == 0) std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    const BenchOptions& o = args.options;
    requireMpiCan(o, size);  // the size MPI reports is the one that counts (the root must be one of its ranks)
    if (rank == 0) printHeader(kProgram, o, size);
    std::vector<braid::tools::BenchRow> rows;
    if (o.dtype == "float32") {
      rows = runSweep<float>(o, MPI_FLOAT, size, rank);
    } else if (o.dtype == "float64") {
      rows = runSweep<double>(o, MPI_DOUBLE, size, rank);
    } else {
      rows = runSweep<int32_t>(o, MPI_INT32_T, size, rank);
    }
    // Where each rank ran, as the kernel says (meta.cpus): after the sweep, so it times nothing.
    std::vector<std::uint64_t> mask = braid::tools::cpuMaskOfThisThread();
    std::vector<std::uint64_t> masks(braid::tools::kCpuMaskWords * static_cast<std::size_t>(size));
    MPI_Allgather(mask.data(), static_cast<int>(braid::tools::kCpuMaskWords), MPI_UINT64_T, masks.data(),
                  static_cast<int>(braid::tools::kCpuMaskWords), MPI_UINT64_T, MPI_COMM_WORLD);
    if (rank == 0 && !args.jsonPath.empty()) {
      nlohmann::json meta =
          braid::tools::provenanceMeta(braid::tools::shellCommand(std::vector<std::string>(argv, argv + argc)), started,
                                       braid::tools::machineInfo(), btlDescription(), {{"mpi", libraryVersion()}});
      meta["impl"] = "mpi";
      meta["cpus"] = braid::tools::cpuListsOf(masks, size);
      meta["library"] = libraryVersion();
      braid::tools::writeResults(args.jsonPath, meta, rows);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: %s\n", kProgram, rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return 0;
}
