// What a collective should cost, projected from link costs: every algorithm is a number of synchronisation steps
// (each paying the link's latency) and a number of bytes each rank moves over its busiest link (at the link's
// bandwidth), Hockney's model. Link costs are data (src/tuning/cost_model.cpp, each with where it was measured);
// braid's selector prices its algorithms with them, `braid model` projects clusters we do not have with them, and
// docs/BENCHMARKS.md compares its projections with what we measured. A projection, not a measurement: caches,
// contention and host jitter are not in it. Namespace tuning: the library's tuning layer implements it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace braid::tuning {

/// What joins two ranks.
enum class Link { kNvlink, kPcie, kShm, kTcp };

struct LinkCost {
  double latencyUs = 0;     ///< one synchronisation step between ranks over the link
  double bandwidthGBs = 0;  ///< what one rank moves over it per second, its peers together (1e9 bytes)
  std::string source;       ///< where the numbers come from
  bool ll = false;          ///< GPU kernels over it can send flags inside the data (the LL protocol)
  double perPeerUs = 0;     ///< what each peer a step waits for adds to it (a flag read per peer, over shm)
  /// False where the model misses what decides between a pipelined schedule and an unpipelined one over this link
  /// (over TCP: the ring overlaps sends with reductions, which the model does not price); the selector then splits
  /// them at a measured size instead (BRAID_DIRECT_MAX_BYTES, whose default was measured over such a link).
  bool modelPricesPipelining = true;
  /// Over shm: the bytes per second a rank reads and writes in its own memory and caches (its copies into its slot,
  /// its reads of its own data, its output), apart from what it reads of its peers'. 0: not priced.
  double localGBs = 0;
};

const char* linkName(Link link);
std::optional<Link> parseLink(const std::string& name);
/// The measured (or, where marked, assumed) cost of each kind of link.
LinkCost defaultLinkCost(Link link);

/// The cost of a GPU link (kNvlink or kPcie) of `generation`: defaultLinkCost's, whose generation was measured (or
/// assumed), with its bandwidth scaled by the ratio of the two generations' rates. 0, or a generation braid does
/// not know: defaultLinkCost's as it is.
LinkCost gpuLinkCost(Link link, int generation);

/// `nodes` hosts of `ranksPerNode` ranks, joined inside a host by `intra` and between hosts by `nics` NICs of
/// cost `inter` each (per host). `rails`: how many of its host's NICs one rank's messages stripe over (braid's TCP
/// rails, BRAID_IFNAME naming them; 1 by default).
struct Cluster {
  int nodes = 1;
  int ranksPerNode = 2;
  LinkCost intra;
  LinkCost inter;
  int nics = 1;
  int rails = 1;
  int ranks() const { return nodes * ranksPerNode; }
};

enum class Collective { kAllreduce, kAllgather, kReduceScatter };
std::optional<Collective> parseCollective(const std::string& name);

/// The schedules the model knows. Within one host: kLL (GPU links only: one step, every 8 data bytes ride in a
/// 16-byte line with their flag),
/// kDirect (one-shot: every rank sends its whole input to every peer), kTwoShot (reduce-scatter then allgather,
/// both direct), kRing, kDoubling (recursive doubling). Across hosts: kRing and kDoubling over all ranks (the
/// inter-host link is the bottleneck), or kHierarchical (reduce-scatter inside each host, a ring between hosts
/// among the ranks of equal local rank, allgather inside each host).
enum class Schedule { kLL, kDirect, kTwoShot, kRing, kDoubling, kHierarchical };
const char* scheduleName(Schedule schedule);

struct Projection {
  Schedule schedule;
  double us = 0;
};

/// The time of `schedule` for `bytes` (for allgather and reduce-scatter: the whole gathered size, as nccl-tests
/// count it); nullopt where the schedule does not apply (LL and two-shot only inside one host).
std::optional<double> projectUs(Collective collective, Schedule schedule, std::size_t bytes, const Cluster& cluster);
/// Every schedule that applies, fastest first.
std::vector<Projection> projectAll(Collective collective, std::size_t bytes, const Cluster& cluster);
/// nccl-tests' bus bandwidth of a collective of `bytes` over `ranks` ranks that took `us`.
double busBandwidthGBs(Collective collective, std::size_t bytes, int ranks, double us);

}  // namespace braid::tuning
