// `braid bench --compare gloo,mpi`: the same sweep, ranks and method through a peer library, run by its driver
// (bench/gloo_bench.cpp, bench/mpi_bench.cpp) as a job of its own, its rows read back for the side-by-side table.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_options.hpp"

namespace braid::tools {

/// What a driver run handed back: its rows, and the meta of its results file (bench/provenance.hpp: the peer's
/// version under peers.<peer>, what joined its ranks under machine.link).
struct PeerRun {
  std::vector<BenchRow> rows;
  nlohmann::json meta;
  std::string bind;  // how runPeer placed the peer's ranks: none, core, block or numa
};

/// Runs `options`' sweep through `peer` ("gloo" or "mpi") on `ranks` local ranks.
/// Throws std::runtime_error naming the peer and why it cannot run (driver not built: name the Debian package;
/// mpirun missing; the driver failing: its exit status and the last lines of its stderr).
PeerRun runPeer(const std::string& peer, const BenchOptions& options, int ranks);

/// What --bind comes to for `ranks` ranks of `library` (braid, gloo, mpi) on this machine: auto is core where they fit
/// the CPUs this process may use, none where they outnumber them, and none for Gloo and for every library over TCP
/// (BRAID_TRANSPORT=tcp; see peers.cpp); any other value is itself, for every library alike.
std::string resolveBind(const std::string& library, const std::string& bind, int ranks);

/// `braid bench --mem device`: braid-bench-device (bench/device_bench.cpp) runs the sweep on GPU buffers with braid
/// and, when `withNccl`, NCCL in the same processes (one per GPU when `ranks` is 0), printing its table on this
/// process's stdout as it goes; returns every row and its meta (machine and link as the GPU ranks saw them,
/// NCCL's version). Throws std::runtime_error when the driver is missing (braid built without CUDA) or fails.
PeerRun runDeviceSweep(const BenchOptions& options, int ranks, bool withNccl);

/// Where runPeer() looks for braid-bench-gloo and braid-bench-mpi: $BRAID_BENCH_DIR when set, else the directory
/// of the running executable (the build's bin/, or the install's bindir).
std::string peerDriverDir();

}  // namespace braid::tools
