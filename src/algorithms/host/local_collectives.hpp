// Collectives among the ranks of one host, over a LocalFabric's rounds (see round_sync.hpp). Every collective is
// a sequence of rounds in which each rank copies (part of) its input into its slot, publishes it, and copies or
// reduces what it needs out of its peers' slots; large buffers take several rounds of slotBytes each.
//
// Allreduce has two algorithms:
// - direct: one round per slot of data; every rank reduces every peer's input (n reads per element; the fewest
//   synchronisations, best for small messages);
// - rsag: reduce-scatter then allgather, two rounds per slot; each rank reduces 1/n of the data and copies the
//   rest (2 reads per element; best when bandwidth dominates).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "algorithms/host/helper_team.hpp"
#include "algorithms/host/single_copy.hpp"
#include "algorithms/op_env.hpp"
#include "transport/local_fabric.hpp"
#include "tuning/algorithm.hpp"
#include "tuning/shm_slot.hpp"

namespace braid::host {

/// What allreduce and reduce among the ranks of one host can run, smallest-message first, for the selector.
std::vector<tuning::AlgorithmDescriptor> localAllreduceAlgorithms();

class LocalCollectives {
 public:
  struct Options {
    /// Calls whose output on this rank is at least this write it with non-temporal stores (SIZE_MAX: never): an
    /// output that large does not stay in this core's cache, and streaming spares reading each of its lines before
    /// writing it. Slots, which peers read next, are always written the ordinary way.
    std::size_t streamFromBytes = std::numeric_limits<std::size_t>::max();
    /// Threads the large passes run on (rsag, reduce-scatter, allgather), the calling thread included (HelperTeam),
    /// and how long its idle helpers spin.
    int threads = 1;
    long spinMicros = 100;
    /// Whether this rank takes part in data-movement collectives that read peers' buffers in place (SingleCopy),
    /// and how it reads them.
    bool singleCopy = true;
    SingleCopy::Reader readPeerMemory = transport::readProcessMemory;
  };

  LocalCollectives(transport::LocalFabric& fabric, const Options& options);

  int rank() const { return fabric_.rank(); }
  int size() const { return fabric_.size(); }

  void barrier(const OpEnv& env);
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, tuning::Algorithm algo,
                 const OpEnv& env);
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
              tuning::Algorithm algo, const OpEnv& env);
  void reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op, const OpEnv& env);
  void broadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env);
  void allgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env);
  void allgatherv(const void* send, std::size_t sendCount, void* recv, std::span<const std::size_t> recvCounts,
                  std::span<const std::size_t> displs, DataType type, const OpEnv& env);
  void gather(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env);
  void scatter(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env);
  void alltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env);
  void alltoallv(const void* send, std::span<const std::size_t> sendCounts, std::span<const std::size_t> sendDispls,
                 void* recv, std::span<const std::size_t> recvCounts, std::span<const std::size_t> recvDispls,
                 DataType type, const OpEnv& env);
  /// One round in which this rank tells its peers it rejected its arguments (they fail with Mismatch naming it).
  void reject(const OpEnv& env);

 private:
  // A pass is cut for the helper threads only into pieces of at least this: waking a spinning helper and learning
  // that it finished cost a cache-line transfer each, a small share of a piece this large.
  static constexpr std::size_t kMinPieceBytes = std::size_t{32} << 10;
  // Runs a pass over `count` elements of `elementBytes` on team_: cut into a piece a thread, each starting on a
  // cache line of the pass, where it is large enough; on the calling thread alone (piece(0, count, 0)) otherwise,
  // for the cost of one compare on small calls.
  template <typename Piece>
  void cut(std::size_t count, std::size_t elementBytes, Piece& piece) {
    if (team_.threads() == 1 || count * elementBytes < 2 * kMinPieceBytes) {
      piece(std::size_t{0}, count, 0);
      return;
    }
    team_.run(count, kMinPieceBytes / elementBytes, 64 / elementBytes, HelperTeam::Piece(piece));
  }
  // Whether a data-movement call that reads `perPeerBytes` from a peer offers to read its peers' buffers in place
  // (SingleCopy). Decided from the slots' size, which every rank of the fabric shares, and the state that every rank
  // changes alike: all ranks of a call hold the offer's round or none does.
  bool readsInPlace(std::size_t perPeerBytes) const { return singleCopy_.on && singleCopyBlocks_.holds(perPeerBytes); }
  // Single copy's pass: block r (`count` elements of `esz` bytes, end to end in `out`) read from `offset` past peer
  // r's exposed buffer, this rank's own block copied from `own` (null: it is in place), cut among team_.
  void readBlocks(SingleCopy& one, std::byte* out, std::size_t count, std::size_t esz, std::size_t offset,
                  const std::byte* own, bool stream);
  // Whether a call that writes `outputBytes` on this rank streams them.
  bool streams(std::size_t outputBytes) const { return outputBytes >= options_.streamFromBytes; }
  // dst = the reduction of size() sources of `count` elements; `stream`: dst written with non-temporal stores.
  void reduceInto(void* dst, const void* const* sources, std::size_t count, DataType type, ReduceOp op,
                  bool stream) const;
  // Reduction of `count` elements at the start of every rank's current slot (or round payload) into dst; `stream`:
  // dst is written with non-temporal stores.
  void reduceSlots(void* dst, std::size_t count, DataType type, ReduceOp op, const class RoundSync& sync,
                   bool fromPayload, bool stream);
  void allreduceDirect(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                       const OpEnv& env);
  void allreduceRsag(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                     const OpEnv& env);

  transport::LocalFabric& fabric_;
  const Options options_;
  HelperTeam team_;
  std::uint32_t round_ = 0;
  // A reduction's sources, one array per thread of team_ (0: the calling thread's): no allocation per call.
  std::vector<std::vector<const void*>> pieceSources_;
  SingleCopy::State singleCopy_;
  const tuning::ByteRange singleCopyBlocks_;
};

}  // namespace braid::host
