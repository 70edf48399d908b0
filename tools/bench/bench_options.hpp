// What `braid bench` measures, shared by braid's own sweep and the peers' drivers (bench/): the same sizes,
// iterations and checks for every implementation, so that their rows compare.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace braid::tools {

struct BenchOptions {
  std::string collective = "allreduce";  // allreduce, allgather, reducescatter, broadcast, reduce, alltoall,
                                         // gather, scatter, sendrecv
  std::size_t minBytes = 8;
  std::size_t maxBytes = 64u << 20;
  std::size_t factor = 2;         // -f: each size is the previous times this
  int iterations = 20;            // -n: calls per timed loop
  int warmup = 5;                 // -w
  int repetitions = 3;            // timed loops per size; the median counts
  int minLoopMs = 0;              // --min-loop-ms: more calls than -n where a loop would be shorter (0: -n)
  bool check = true;              // -c
  std::string op = "sum";         // -o
  std::string dtype = "float32";  // -d
  int root = 0;                   // -r
  bool inplace = false;
  std::string mem = "host";
  // --bind: how braid bench pins the ranks it starts, braid's and the peers' alike: none, core (one CPU each, as
  // mpirun's default for 2 ranks), block (the CPUs divided among the ranks) or numa; auto is core where the ranks fit
  // the CPUs braid bench may use (block with BRAID_SHM_THREADS), else none, and none for Gloo's processes and over
  // TCP (resolveBind in peers.cpp says why). Not passed to the drivers: braid bench places their processes.
  std::string bind = "auto";
  // A self-test of the checker, never a measurement: one element of one rank's result is altered before each
  // check, so every checked row must count exactly 1 wrong element (braid bench: BRAID_BENCH_CORRUPT_ONE=1).
  bool corruptOne = false;
};

/// One measured size of one implementation, as written to --json.
struct BenchRow {
  std::string impl;  // braid, gloo, mpi, nccl
  std::string collective;
  std::string dtype;
  std::string redop;  // "" for collectives that do not reduce
  std::size_t bytes = 0;
  std::size_t count = 0;
  int ranks = 0;
  int root = -1;  // -1 where the collective has none
  std::string mem = "host";
  double timeUs = 0;
  double algbwGBs = 0;
  double busbwGBs = 0;
  long wrong = 0;      // -1: not checked
  int iterations = 0;  // calls per timed loop (0: not recorded)
  // Rows timed by timeLoops: context switches of a rank's calling thread per call, the most any rank had (LoopTiming);
  // what tells a row slowed by sleeping ranks from one slowed by ranks taken off their cores. Negative: not counted.
  double voluntarySwitchesPerCall = -1;
  double involuntarySwitchesPerCall = -1;
  // Device sweeps: the host's time to issue one call, and an empty kernel's launch timed back to back in the same
  // run (the floor of any call's host cost). Negative: not measured (left out of the JSON).
  double issueUs = -1;
  double emptyLaunchUs = -1;
  // What braid ran for the row (the transport, and for allreduce and reduce the algorithm its selector chose);
  // empty for peers (left out of the JSON).
  std::string algorithm;
};

/// The sizes of a sweep: minBytes, minBytes*factor, ... up to maxBytes, each rounded down to whole elements
/// (collectives over blocks use whole elements per rank).
std::vector<std::size_t> sweepSizes(const BenchOptions& options, std::size_t elementBytes);

/// nccl-tests' bus bandwidth factor for `collective` over `ranks`: allreduce 2(n-1)/n; allgather,
/// reducescatter, alltoall, gather, scatter (n-1)/n; broadcast, reduce, sendrecv 1.
double busFactor(const std::string& collective, int ranks);

/// Whether the collective takes a reduce op / a root.
bool reducesData(const std::string& collective);
bool hasRoot(const std::string& collective);

/// The collectives `braid bench all` runs, in order.
const std::vector<std::string>& benchCollectives();

}  // namespace braid::tools
