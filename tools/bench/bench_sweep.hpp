// braid's side of `braid bench`: one rank's measurement of a sweep with nccl-tests' method.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_options.hpp"
#include "braid/braid.hpp"

namespace braid::tools {

/// Measures `collective` over every size of the sweep on `comm`; every rank returns the same rows.
/// `onRow` (may be empty) is called on each rank as each row completes, for live output; `onSize` (may be empty)
/// before each size is measured, with its index and the number of sizes, for a progress line.
/// With options.check, each size ends with one more call on fresh inputs whose result every rank checks exactly;
/// the row's `wrong` is the sum over ranks (sumWrongCounts). With options.corruptOne, one element of one rank's
/// result is altered before that check, so each checked row must count exactly 1: a self-test of the checker.
std::vector<BenchRow> runSweep(
    Communicator& comm, const std::string& collective, const BenchOptions& options,
    const std::function<void(const BenchRow&, const std::string& algorithm)>& onRow,
    const std::function<void(std::size_t bytes, std::size_t index, std::size_t total)>& onSize = nullptr);

/// The buffers of a sweep: allocated once for its largest size (plus slack), reused by every size.
struct SweepBuffers {
  std::vector<std::byte> send, recv;
};

/// One size of one collective on one rank, as runSweep measures and checks it.
struct SweepCase {
  std::function<void()> fill;   ///< writes fresh exact inputs (small integers, exact in every dtype)
  std::function<void()> call;   ///< one call of the collective
  std::function<long()> check;  ///< counts the elements of this rank's result that differ from the exact ones
  /// Where this rank's result lies after call(): what check() reads; empty where the rank has none (reduce and
  /// gather off the root).
  std::span<std::byte> result;
  std::size_t elementBytes = 0;
};

/// The case for `bytes` (the nccl-tests size) of `collective` with `options`' dtype, op, root and in-place flag,
/// on buffers sized for it. Throws std::invalid_argument for an unknown collective, dtype or op.
SweepCase sweepCase(Communicator& comm, const std::string& collective, const BenchOptions& options, std::size_t bytes,
                    SweepBuffers& buffers);

/// The sum over ranks of each rank's `mine`, returned on every rank, for the wrong counts of one checked call.
/// It goes through the communicator's rendezvous store (a TCP connection of its own to the job's root, which no
/// collective uses), never through a collective of `comm`: a collective that corrupts data cannot corrupt its own
/// count. A communicator made without a store (thread ranks over the in-memory transport, as tests make them)
/// sums by point-to-point messages through rank 0, or by an allreduce where point-to-point is what `collective`
/// tests (sendrecv). Every rank must call it, in the same order relative to its other calls on `comm`.
long sumWrongCounts(Communicator& comm, const std::string& collective, long mine);

}  // namespace braid::tools
