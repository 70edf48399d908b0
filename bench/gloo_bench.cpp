// braid-bench-gloo: one rank of `braid bench --compare gloo`, the same sweep and method as braid's own, through
// Gloo's collectives over its TCP transport on loopback (what torch.distributed's gloo backend uses on one host).
//
// Started by runPeer() (tools/bench/peers.cpp), or by hand: RANK, WORLD_SIZE and BRAID_BENCH_STORE (a directory
// that every rank shares, empty at the start) are read from the environment.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_json.hpp"
#include "bench/driver_args.hpp"
#include "bench/machine_info.hpp"
#include "bench/provenance.hpp"
#include "bench/rank_cpus.hpp"

// The Debian package the Gloo headers and library came from, "libgloo-dev 0.0~git20220518.5b14351-3", found by
// bench/CMakeLists.txt at configure time: Gloo's own version macros have said 0.5.0 for years of snapshots.
#ifndef BRAID_GLOO_PACKAGE
#define BRAID_GLOO_PACKAGE ""
#endif

namespace braid::bench {

namespace {

using tools::BenchOptions;
using tools::BenchRow;
using Ctx = std::shared_ptr<gloo::Context>;
using ReduceFn = void (*)(void*, const void*, const void*, std::size_t);

constexpr const char* kProgram = "braid-bench-gloo";
// One call of the largest sizes over loopback TCP takes seconds; a rank that died must still end the run, well
// before runPeer()'s own 20-minute limit.
constexpr std::chrono::minutes kCallTimeout{5};
// Slot of the ring shift (sendrecv). Any constant works: each rank has one such operation in flight at a time.
constexpr uint64_t kSendRecvSlot = 0x6272616964;

template <typename T>
T toElement(double v) {
  return static_cast<T>(v);
}
template <>
gloo::float16 toElement<gloo::float16>(double v) {
  return gloo::float16(v);
}

template <typename T>
ReduceFn reduceFunction(const std::string& op) {
  // gloo::sum etc. are overloaded (a 3- and a 4-argument form): name the 4-argument one the options take.
  if (op == "prod") return static_cast<ReduceFn>(&gloo::product<T>);
  if (op == "min") return static_cast<ReduceFn>(&gloo::min<T>);
  if (op == "max") return static_cast<ReduceFn>(&gloo::max<T>);
  return static_cast<ReduceFn>(&gloo::sum<T>);
}

template <typename T>
const gloo::ReductionFunction<T>* reductionFunction(const std::string& op) {
  if (op == "prod") return gloo::ReductionFunction<T>::product;
  if (op == "min") return gloo::ReductionFunction<T>::min;
  if (op == "max") return gloo::ReductionFunction<T>::max;
  return gloo::ReductionFunction<T>::sum;
}

void barrier(const Ctx& ctx) {
  gloo::BarrierOptions opts(ctx);
  gloo::barrier(opts);
}

template <typename T>
T allreduceOne(const Ctx& ctx, T value, ReduceFn fn) {
  gloo::AllreduceOptions opts(ctx);
  opts.setOutput(&value, 1);
  opts.setReduceFunction(fn);
  gloo::allreduce(opts);
  return value;
}

// What this Gloo cannot do the way the method asks; said before any rank connects, so every rank stops alike.
void requireGlooCan(const BenchOptions& o, int ranks) {
  requireSupported("gloo", o, ranks, {"float32", "float64", "int32", "float16"});
  if (ranks < 2) throw std::invalid_argument("gloo: a run needs 2 or more ranks (Gloo has no pair to itself)");
  const std::string& c = o.collective;
  if (o.inplace && (c == "alltoall" || c == "gather" || c == "scatter" || c == "sendrecv")) {
    throw std::invalid_argument("gloo has no in-place " + c + " (its " + c + " takes separate input and output)");
  }
  if (c == "reducescatter" && o.maxBytes > static_cast<std::size_t>(INT_MAX)) {
    // ReduceScatterHalvingDoubling keeps its element and byte counts in an int.
    throw std::invalid_argument("gloo: reducescatter (ReduceScatterHalvingDoubling) counts bytes in an int: -e " +
                                std::to_string(o.maxBytes) + " is above 2 GiB - 1");
  }
}

// One size of the sweep: the gloo options (or algorithm) built once over fixed buffers, and the call on them.
struct Plan {
  std::function<void()> call;
  std::shared_ptr<void> state;  // what `call` uses
};

template <typename T>
Plan plan(const Ctx& ctx, const BenchOptions& o, std::size_t count, T* send, T* recv, T* work) {
  const int n = ctx->size, me = ctx->rank;
  const std::string& c = o.collective;
  const std::size_t block = overBlocks(c) ? count / static_cast<std::size_t>(n) : count;
  Plan p;
  if (c == "allreduce") {
    auto opts = std::make_shared<gloo::AllreduceOptions>(ctx);
    if (!o.inplace) opts->setInput(send, count);
    opts->setOutput(recv, count);
    opts->setReduceFunction(reduceFunction<T>(o.op));
    p.call = [opts] { gloo::allreduce(*opts); };
    p.state = opts;
  } else if (c == "reduce") {
    auto opts = std::make_shared<gloo::ReduceOptions>(ctx);
    if (!o.inplace) opts->setInput(send, count);
    opts->setOutput(recv, count);  // every rank's: Gloo's ring reduces through it
    opts->setRoot(o.root);
    opts->setReduceFunction(reduceFunction<T>(o.op));
    p.call = [opts] { gloo::reduce(*opts); };
    p.state = opts;
  } else if (c == "reducescatter") {
    // Gloo's only reduce-scatter works in place on the n-block buffer and leaves this rank's block at its start.
    // Out of place, each call first copies the input there, as an out-of-place call must keep its input.
    T* buffer = o.inplace ? recv : work;
    auto algo = std::make_shared<gloo::ReduceScatterHalvingDoubling<T>>(
        ctx, std::vector<T*>{buffer}, static_cast<int>(count), std::vector<int>(n, static_cast<int>(block)),
        reductionFunction<T>(o.op));
    if (o.inplace) {
      p.call = [algo] { algo->run(); };
    } else {
      p.call = [algo, send, recv, buffer, count, block] {
        std::memcpy(static_cast<void*>(buffer), send, count * sizeof(T));
        algo->run();
        std::memcpy(static_cast<void*>(recv), buffer, block * sizeof(T));
      };
    }
    p.state = algo;
  } else if (c == "allgather") {
    auto opts = std::make_shared<gloo::AllgatherOptions>(ctx);
    if (!o.inplace) opts->setInput(send, block);
    opts->setOutput(recv, count);
    p.call = [opts] { gloo::allgather(*opts); };
    p.state = opts;
  } else if (c == "gather") {
    auto opts = std::make_shared<gloo::GatherOptions>(ctx);
    opts->setInput(send, block);
    if (me == o.root) opts->setOutput(recv, count);
    opts->setRoot(o.root);
    p.call = [opts] { gloo::gather(*opts); };
    p.state = opts;
  } else if (c == "broadcast") {
    // One buffer, the root's input in it, as braid's and MPI's broadcast have.
    auto opts = std::make_shared<gloo::BroadcastOptions>(ctx);
    opts->setOutput(recv, count);
    opts->setRoot(o.root);
    p.call = [opts] { gloo::broadcast(*opts); };
    p.state = opts;
  } else if (c == "scatter") {
    auto opts = std::make_shared<gloo::ScatterOptions>(ctx);
    if (me == o.root) {
      std::vector<T*> blocks;
      for (int r = 0; r < n; ++r) blocks.push_back(send + static_cast<std::size_t>(r) * block);
      opts->setInputs(blocks, block);
    }
    opts->setOutput(recv, block);
    opts->setRoot(o.root);
    p.call = [opts] { gloo::scatter(*opts); };
    p.state = opts;
  } else if (c == "alltoall") {
    auto opts = std::make_shared<gloo::AlltoallOptions>(ctx);
    opts->setInput(send, count);
    opts->setOutput(recv, count);
    p.call = [opts] { gloo::alltoall(*opts); };
    p.state = opts;
  } else if (c == "sendrecv") {
    // The ring shift of nccl-tests' sendrecv: send to the next rank, receive from the previous one.
    struct Shift {
      std::unique_ptr<gloo::transport::UnboundBuffer> out, in;
    };
    auto shift = std::make_shared<Shift>();
    shift->out = ctx->createUnboundBuffer(send, count * sizeof(T));
    shift->in = ctx->createUnboundBuffer(recv, count * sizeof(T));
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    p.call = [shift, next, prev] {
      shift->in->recv(prev, kSendRecvSlot);
      shift->out->send(next, kSendRecvSlot);
      shift->out->waitSend(kCallTimeout);
      shift->in->waitRecv(kCallTimeout);
    };
    p.state = shift;
  } else {
    throw std::invalid_argument(std::string("gloo: no driver for collective '") + c + "'");
  }
  return p;
}

template <typename T>
std::vector<BenchRow> runSweep(const Ctx& ctx, const BenchOptions& o) {
  const int n = ctx->size, me = ctx->rank;
  const std::vector<std::size_t> sizes = driverSizes(o, n);
  const std::size_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end()) / sizeof(T);
  // Allocated and touched once, as braid's sweep does, so that no size pays first-touch page faults when timed.
  std::vector<T> send(largest + 1), recv(largest + 1);
  std::vector<T> work(o.collective == "reducescatter" && !o.inplace ? largest + 1 : 0);
  auto conv = [](double v) { return toElement<T>(v); };
  std::vector<BenchRow> rows;
  for (const std::size_t bytes : sizes) {
    const std::size_t count = bytes / sizeof(T);
    Plan p = plan<T>(ctx, o, count, send.data(), recv.data(), work.data());
    fillSize(o, n, me, count, send.data(), recv.data(), conv);
    const tools::LoopTiming timing = tools::timeLoops(
        o, p.call, [&] { barrier(ctx); },
        [&](double s) { return allreduceOne(ctx, s, static_cast<ReduceFn>(&gloo::max<double>)); });
    long wrong = -1;
    if (o.check) {
      fillSize(o, n, me, count, send.data(), recv.data(), conv);  // fresh inputs: in place, the loops changed them
      p.call();
      const int64_t mine = countWrong(o, n, me, count, recv.data(), conv);
      wrong = static_cast<long>(allreduceOne<int64_t>(ctx, mine, static_cast<ReduceFn>(&gloo::sum<int64_t>)));
    }
    rows.push_back(makeRow("gloo", o, n, bytes, timing, wrong));
    if (me == 0) printRow(rows.back());
    // The next size's buffers and slots replace this one's only when every rank is done with it.
    barrier(ctx);
  }
  return rows;
}

int envInt(const char* name) {
  const char* v = std::getenv(name);
  char* end = nullptr;
  const long x = v ? std::strtol(v, &end, 10) : -1;
  if (!v || *v == '\0' || *end != '\0' || x < 0 || x > INT_MAX) {
    throw std::invalid_argument(
        std::string(name) + (v ? " '" + std::string(v) + "' is not a rank count" : " is not set") + ": " + kProgram +
        " is one rank of `braid bench --compare gloo`; by hand, set RANK, WORLD_SIZE and "
        "BRAID_BENCH_STORE (an empty directory shared by the ranks)");
  }
  return static_cast<int>(x);
}

// "Gloo 0.5.0 (Debian libgloo-dev 0.0~git20220518.5b14351-3)": the version this driver was built against.
std::string glooVersion() {
  std::string v = "Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." +
                  std::to_string(GLOO_VERSION_PATCH);
  if (*BRAID_GLOO_PACKAGE != '\0') v += std::string(" (Debian ") + BRAID_GLOO_PACKAGE + ")";
  return v;
}

int run(int argc, char** argv, int& rank) {
  const std::string started = tools::isoNow();
  const DriverArgs args = parseDriverArgs(argc, argv);
  if (args.help) {
    std::fputs(driverUsage(kProgram).c_str(), stdout);
    return 0;
  }
  const BenchOptions& o = args.options;
  rank = envInt("RANK");
  const int size = envInt("WORLD_SIZE");
  if (rank >= size)
    throw std::invalid_argument("RANK " + std::to_string(rank) + " is not below WORLD_SIZE " + std::to_string(size));
  const char* storeDir = std::getenv("BRAID_BENCH_STORE");
  if (!storeDir || *storeDir == '\0')
    throw std::invalid_argument("BRAID_BENCH_STORE (the ranks' shared directory) is not set");
  requireGlooCan(o, size);

  gloo::transport::tcp::attr attr;
  // One host: loopback, whatever interfaces the machine has; across hosts (scripts/netns-bench.sh) the address
  // of this rank's host.
  const char* host = std::getenv("BRAID_BENCH_GLOO_HOST");
  attr.hostname = host && *host ? host : "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore fileStore(storeDir);
  // A prefix per run lets one store directory serve several runs; runPeer() sets a fresh one.
  const char* prefix = std::getenv("BRAID_BENCH_PREFIX");
  gloo::rendezvous::PrefixStore store(prefix && *prefix ? prefix : "braid-bench-gloo", fileStore);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(kCallTimeout);
  context->connectFullMesh(store, device);
  const Ctx ctx = context;

  if (rank == 0) printHeader(kProgram, o, size);
  std::vector<BenchRow> rows;
  if (o.dtype == "float32") {
    rows = runSweep<float>(ctx, o);
  } else if (o.dtype == "float64") {
    rows = runSweep<double>(ctx, o);
  } else if (o.dtype == "int32") {
    rows = runSweep<int32_t>(ctx, o);
  } else {
    rows = runSweep<gloo::float16>(ctx, o);
  }
  // Where each rank ran, as the kernel says (meta.cpus): after the sweep, so it times nothing.
  std::vector<std::uint64_t> mask = tools::cpuMaskOfThisThread();
  std::vector<std::uint64_t> masks(tools::kCpuMaskWords * static_cast<std::size_t>(size));
  {
    gloo::AllgatherOptions gather(context);
    gather.setInput(mask.data(), mask.size());
    gather.setOutput(masks.data(), masks.size());
    gloo::allgather(gather);
  }
  if (rank == 0 && !args.jsonPath.empty()) {
    std::string link;
    for (const auto& name : tools::interfacesOf({attr.hostname})) link += (link.empty() ? "" : ", ") + name;
    nlohmann::json meta =
        tools::provenanceMeta(tools::shellCommand(std::vector<std::string>(argv, argv + argc)), started,
                              tools::machineInfo(), "Gloo's TCP transport over " + link, {{"gloo", glooVersion()}});
    meta["impl"] = "gloo";
    meta["cpus"] = tools::cpuListsOf(masks, size);
    meta["library"] = glooVersion() + ", TCP transport on " + attr.hostname;
    writeResults(args.jsonPath, meta, rows);
  }
  // Leave together: a rank that exits first would look like a lost peer to the others' last calls.
  barrier(ctx);
  return 0;
}

}  // namespace

}  // namespace braid::bench

int main(int argc, char** argv) {
  int rank = -1;
  try {
    return braid::bench::run(argc, argv, rank);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %s: %s\n", braid::bench::kProgram, rank >= 0 ? std::to_string(rank).c_str() : "?",
                 e.what());
    return 1;
  }
}
