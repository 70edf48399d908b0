// What the peers' drivers (braid-bench-gloo, braid-bench-mpi) share: their flags, and the pieces of nccl-tests'
// method that must not differ between implementations (sizes, exact inputs, expected results, the timed loops,
// the row). braid's own sweep (tools/bench/bench_sweep.cpp) uses the same inputs and the same median, so a row of
// any implementation compares with a row of any other.
#pragma once

#include <cstddef>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_options.hpp"
#include "bench/timed_loops.hpp"

namespace braid::bench {

/// What one driver run was asked to do.
struct DriverArgs {
  tools::BenchOptions options;
  std::string jsonPath;  // where rank 0 writes its rows; empty: the table on stdout only
  bool help = false;
};

/// Parses the drivers' flags: --collective NAME -b BYTES -e BYTES -f N -n N -w N -c 0|1 -o OP -d DTYPE -r ROOT
/// --inplace --reps N --min-loop-ms MS --json PATH (byte sizes take K/M/G suffixes). Dtype and op names are made
/// canonical (float -> float32, product -> prod). Throws std::invalid_argument naming the flag and the value.
DriverArgs parseDriverArgs(int argc, char** argv);

/// The usage text of `program`.
std::string driverUsage(const std::string& program);

/// "8", "64K", "16M", "1G", "4KiB" -> bytes (powers of 1024); nullopt when it is not a size.
std::optional<std::size_t> parseByteSize(const std::string& text);

/// Bytes per element of a canonical dtype (float32, float64, int32, float16); 0 for any other.
std::size_t dtypeBytes(const std::string& dtype);

/// Throws std::invalid_argument naming `peer` when its driver cannot run `options`: a dtype outside `dtypes`,
/// an op that is not one of sum/prod/min/max, an unknown collective, or a root outside [0, ranks).
void requireSupported(const std::string& peer, const tools::BenchOptions& options, int ranks,
                      const std::vector<std::string>& dtypes);

/// Whether `collective`'s buffers are made of one block per rank (its sizes are whole blocks of whole elements).
bool overBlocks(const std::string& collective);

/// The sizes a driver measures on `ranks`: braid's sweepSizes(), in whole elements per rank for the block
/// collectives, exactly as braid's own sweep rounds them. Sizes that round to 0 bytes (8 B of float32 over 3 or
/// more ranks, for a block collective) are left out: there is nothing to move.
std::vector<std::size_t> driverSizes(const tools::BenchOptions& options, int ranks);

/// Element `index` of `rank`'s input to a reduction: small integers whose sums, products, min and max are exact
/// in every dtype (the values braid's sweep uses).
double reduceInput(const std::string& op, int rank, std::size_t index);
/// Element `index` of the reduction of every rank's reduceInput().
double reduceExpected(const std::string& op, int ranks, std::size_t index);
/// Element `index` of the data that `rank` contributes to a collective that moves data without reducing it.
double moveInput(int rank, std::size_t index);

/// Writes `me`'s exact inputs for one size of `count` elements (the largest buffer's) and fills what the call must
/// overwrite with -1, which no expected value equals. Out of place the input goes to `send`; in place it goes where
/// the collective reads it from `recv` (its own block for allgather, and gather at the root), except where the
/// collective keeps a separate input there too (gather off the root, scatter's root). Broadcast always uses `recv`
/// alone: braid's and MPI's broadcast have one buffer. `toElement` converts a double to T.
template <typename T, typename ToElement>
void fillSize(const tools::BenchOptions& o, int ranks, int me, std::size_t count, T* send, T* recv,
              ToElement toElement) {
  const std::string& c = o.collective;
  const std::size_t block = overBlocks(c) ? count / static_cast<std::size_t>(ranks) : count;
  const std::size_t mine = static_cast<std::size_t>(me) * block;
  for (std::size_t i = 0; i < count; ++i) recv[i] = toElement(-1.0);
  if (c == "allreduce" || c == "reduce" || c == "reducescatter") {
    T* in = o.inplace ? recv : send;
    for (std::size_t i = 0; i < count; ++i) in[i] = toElement(reduceInput(o.op, me, i));
  } else if (c == "allgather" || c == "gather") {
    const bool intoRecv = o.inplace && (c == "allgather" || me == o.root);
    T* in = intoRecv ? recv + mine : send;
    for (std::size_t i = 0; i < block; ++i) in[i] = toElement(moveInput(me, i));
  } else if (c == "broadcast") {
    if (me == o.root) {
      for (std::size_t i = 0; i < count; ++i) recv[i] = toElement(moveInput(me, i));
    }
  } else if (c == "scatter") {
    if (me == o.root) {
      for (std::size_t i = 0; i < count; ++i) send[i] = toElement(moveInput(static_cast<int>(i / block), i % block));
    }
  } else {  // alltoall, sendrecv
    T* in = o.inplace ? recv : send;
    for (std::size_t i = 0; i < count; ++i) in[i] = toElement(moveInput(me, i));
  }
}

/// Counts the elements of `me`'s result at `out` that differ from the exact expected values (0 where the rank
/// has no result: reduce and gather off the root). `out` is the receive buffer, or wherever the collective leaves
/// this rank's result (in-place scatter's root: its own block of the send buffer).
template <typename T, typename ToElement>
long countWrong(const tools::BenchOptions& o, int ranks, int me, std::size_t count, const T* out, ToElement toElement) {
  const std::string& c = o.collective;
  const std::size_t block = overBlocks(c) ? count / static_cast<std::size_t>(ranks) : count;
  long wrong = 0;
  auto compare = [&](std::size_t i, double want) {
    const T expected = toElement(want);
    wrong += std::memcmp(&expected, out + i, sizeof(T)) != 0;
  };
  if ((c == "reduce" || c == "gather") && me != o.root) return 0;
  if (c == "allreduce" || c == "reduce") {
    for (std::size_t i = 0; i < count; ++i) compare(i, reduceExpected(o.op, ranks, i));
  } else if (c == "reducescatter") {
    const std::size_t mine = static_cast<std::size_t>(me) * block;
    for (std::size_t i = 0; i < block; ++i) compare(i, reduceExpected(o.op, ranks, mine + i));
  } else if (c == "allgather" || c == "gather") {
    for (std::size_t i = 0; i < count; ++i) compare(i, moveInput(static_cast<int>(i / block), i % block));
  } else if (c == "broadcast") {
    for (std::size_t i = 0; i < count; ++i) compare(i, moveInput(o.root, i));
  } else if (c == "scatter") {
    for (std::size_t i = 0; i < block; ++i) compare(i, moveInput(me, i));
  } else if (c == "alltoall") {
    const std::size_t mine = static_cast<std::size_t>(me) * block;
    for (std::size_t i = 0; i < count; ++i) compare(i, moveInput(static_cast<int>(i / block), mine + i % block));
  } else {  // sendrecv: from the previous rank of the ring
    for (std::size_t i = 0; i < count; ++i) compare(i, moveInput((me + ranks - 1) % ranks, i));
  }
  return wrong;
}

/// One measured size as a row of `impl` (timed by tools::timeLoops, as braid's sweep is): algbw = bytes / time,
/// busbw = algbw * busFactor. `wrong` -1: not checked.
tools::BenchRow makeRow(const std::string& impl, const tools::BenchOptions& options, int ranks, std::size_t bytes,
                        const tools::LoopTiming& timing, long wrong);

/// The table a driver's rank 0 prints as it goes, nccl-tests-like.
void printHeader(const std::string& program, const tools::BenchOptions& options, int ranks);
void printRow(const tools::BenchRow& row);

}  // namespace braid::bench
