// One selector per engine and communicator: given the algorithms that can run a call (their descriptors), the
// machine they run on (detected once at creation) and what `braid tune` measured, it picks one and can say why.
// Choosing is on every call's path, so the selector works out its crossovers once, when it is made (the sizes at
// which the cheapest candidate changes), and choose() looks the size up among them: no model, no string, no
// allocation per call. explain() prices every candidate when asked (braid explain, BRAID_LOG=info,
// Communicator::explain).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "topology/topology.hpp"
#include "tuning/algorithm.hpp"

namespace braid::tuning {

/// Which calls an algorithm name applies to: host buffers or device buffers.
enum class Path { kHost, kDevice };
/// The algorithm BRAID_ALGO forces on `path` ("" when none); InvalidArgument for a name braid does not know.
std::string forcedAlgorithm(const Settings& settings, Path path);
/// The crossover BRAID_DIRECT_MAX_BYTES_BY_RANKS ("2:16K,8:4096") lists for `ranks`, if any; InvalidArgument names a
/// malformed entry.
std::optional<std::size_t> measuredCrossoverFor(const std::string& table, int ranks);

/// What the selector knows of where the ranks run: what the ranks learned of each other at creation (the host
/// side) or when the device engine connected (the GPUs). Every field but the first three may be 0: unknown.
struct Machine {
  int ranks = 1;           ///< the ranks the algorithms run among
  int usableCpus = 0;      ///< cores this process may run on; 0: unknown
  Link link = Link::kShm;  ///< what joins them (priced by linkCostOf)
  int numaNodes = 0;       ///< over shared memory: the NUMA nodes the host's ranks run on
  int nicMbps = 0;         ///< over TCP between hosts: the slowest rank's NICs, its rails together, in Mbit/s
  int gpus = 0;            ///< over GPU links: the GPUs the ranks use
  int linkGeneration = 0;  ///< over GPU links: the NVLink or PCIe generation, the lowest among the ranks' GPUs
};
/// The machine of `ranks` ranks of one host joined by `link`, from that host's detected topology.
Machine machineOf(const topology::Topology& host, int ranks, Link link);
/// What one step and one byte cost on `machine`'s link: defaultLinkCost's, the GPU link's for its generation, TCP's
/// at most the slowest NIC's rate. Its source says which.
LinkCost linkCostOf(const Machine& machine);
struct Selection {
  /// kPath: no modelled candidate applies, and this is the first unmodelled one that does (what the machine leaves).
  enum class Why { kForced, kMeasured, kModel, kPath };
  const AlgorithmDescriptor* algorithm = nullptr;  ///< one of the selector's candidates: lives as long as it
  Why why = Why::kModel;
};

class Selector {
 public:
  /// `candidates`: smallest-message algorithm first. A measured crossover (BRAID_DIRECT_MAX_BYTES from the
  /// environment or the tune file; over a link whose model does not price pipelining, its default) sends calls up
  /// to it to the unpipelined candidates and larger ones to the pipelined ones; the cost model of `machine` chooses
  /// among those, or among all without such a crossover. InvalidArgument for an unknown BRAID_ALGO.
  Selector(std::vector<AlgorithmDescriptor> candidates, Machine machine, const Settings& settings, Path path);

  Selection choose(std::size_t bytes) const;
  /// "rsag: cost model; reduce-scatter then allgather, ... Considered, for 65536 B over 8 ranks (shm): direct
  /// 97.51 us rsag 32.98 us [model: ...]": the choice, why, what it does, and every candidate's projected cost.
  std::string explain(std::size_t bytes) const;
  /// The cost model's projection of `algorithm` for `bytes` on this machine; nullopt where it does not apply.
  std::optional<double> projectedUs(const AlgorithmDescriptor& algorithm, std::size_t bytes) const;
  const Machine& machine() const { return machine_; }

  /// Calls of up to `upTo` bytes (and more than the previous range's) run candidate `candidate` by the cost model
  /// (an index, so that a copied selector stays whole).
  struct Range {
    std::size_t upTo;
    std::size_t candidate;
  };
  /// The model's choices over all sizes, smallest first; the last range ends at SIZE_MAX.
  const std::vector<Range>& crossovers() const { return ranges_; }
  const std::vector<AlgorithmDescriptor>& candidates() const { return candidates_; }

 private:
  enum class Side { kAll, kUnpipelined, kPipelined };
  bool applies(const AlgorithmDescriptor& a, std::size_t bytes) const;
  /// The candidate on `side` the model projects cheapest for `bytes` (an index); candidates_.size() when none
  /// applies.
  std::size_t cheapest(std::size_t bytes, Side side) const;
  /// The model's choice on `side` over all sizes; where none applies, the first candidate.
  std::vector<Range> findCrossovers(Side side) const;
  static std::size_t lookUp(const std::vector<Range>& ranges, std::size_t bytes);

  std::vector<AlgorithmDescriptor> candidates_;
  Machine machine_;
  Cluster cluster_;
  int forced_ = -1;                         // the candidate BRAID_ALGO names (an index: a copied Selector stays whole)
  std::optional<std::size_t> measuredMax_;  // the first candidate's measured upper bound
  std::string measuredFrom_;                // where that bound was read
  std::vector<Range> ranges_;               // the model's choice, by size
  std::vector<Range> unpipelined_;          // the same among the unpipelined candidates (with a measured crossover)
  std::vector<Range> pipelined_;            // and among the pipelined ones
};

}  // namespace braid::tuning
