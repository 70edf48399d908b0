#include "braid/cost_model.hpp"

#include <algorithm>
#include <cmath>

namespace braid::tuning {

const char* linkName(Link link) {
  switch (link) {
    case Link::kNvlink:
      return "nvlink";
    case Link::kPcie:
      return "pcie";
    case Link::kShm:
      return "shm";
    case Link::kTcp:
      return "tcp";
  }
  return "?";
}

std::optional<Link> parseLink(const std::string& name) {
  for (Link l : {Link::kNvlink, Link::kPcie, Link::kShm, Link::kTcp}) {
    if (name == linkName(l)) return l;
  }
  return std::nullopt;
}

LinkCost defaultLinkCost(Link link) {
  switch (link) {
    case Link::kNvlink:
      // 2xH200, NV18: the LL kernel (one step) takes 2.8-3.0 us of GPU time per call from CUDA graphs
      // (bench/results/nvlink-2xh200-2026-11-30.json); one-shot moves 342 GB/s at 512 MiB
      // (bench/results/nvlink-2xh200-large-oneshot-2026-11-30.json).
      return {2.7, 342, "2xH200 NV18, measured (LL 2.8 us, one-shot 342 GB/s at 512 MiB)", true};
    case Link::kPcie:
      return {5.0, 22, "assumed: PCIe 4.0 x16 peer copies (~22 GB/s); not measured here", true};
    case Link::kShm:
      // Fitted to the H200 machine's 16-core host, 2-16 ranks, each host algorithm forced from 8 B to 1 MiB
      // (bench/results/shm-forced-h200host-2026-12-04.json): small calls take 0.85 + 0.1 p us direct (two steps,
      // every peer's flag read once) and 1.1 + 0.2 (p - 1) us reduce-scatter + allgather (three steps, read twice);
      // each rank reads its peers' data at ~5 GB/s in both. What a rank moves in its own memory besides, at 20 GB/s
      // of reads and writes: on 2 ranks, where both read as much of their peer, rsag moves half a message fewer
      // there, which at that rate is 0.03 ms at 1 MiB to 1.7 ms at 64 MiB; it took -0.06 to 1.7 ms less than direct,
      // within that span at every size (bench/results/shm-allreduce-2ranks-streamed-rsag-h200host-2026-12-05.json
      // against the two -streamed-direct- runs of the same start).
      return {0.37,
              5.0,
              "16-core H200 host, 2-16 ranks, measured (steps 0.37 us + 0.1 us per peer, 5 GB/s from peers, 20 GB/s "
              "in a rank's own memory)",
              false,
              0.1,
              true,
              20.0};
    case Link::kTcp:
      // Loopback, 2 ranks on the 2-core VM: 8 B in 6-8 us (direct, two steps), 512 KiB-2 MiB at 2.7-2.9 GB/s. Each
      // peer's message costs its own system calls: fitted to the H200 host's loopback, 8 B direct against doubling
      // (docs/BENCHMARKS.md: 4 ranks 34.8 and 29.0 us, 8 ranks 86.6 and 42.1 us), ~9.3 us a peer.
      return {3.3,   2.8, "loopback, measured (2 ranks: 8 B 6.7 us, 2 MiB 2.7 GB/s; 4-8 ranks: 9.3 us a peer)",
              false, 9.3, false};
  }
  return {};
}

namespace {

// What defaultLinkCost describes: NVLink 4 (H200) measured, PCIe 4.0 x16 assumed.
constexpr int kMeasuredNvlinkGeneration = 4;
constexpr int kAssumedPcieGeneration = 4;

// Each generation's rate against the one defaultLinkCost describes. NVLink, a GPU's links together (NVIDIA's
// figures, both directions): 2.0 300 GB/s, 3.0 600, 4.0 900, 5.0 1800. PCIe x16 doubles its transfer rate from each
// generation to the next (3.0 8 GT/s ... 6.0 64 GT/s; 3.0 onward with the same 128b/130b encoding, 6.0's flits
// about as efficient).
std::optional<double> rateAgainstDefault(Link link, int generation) {
  if (link == Link::kNvlink) {
    switch (generation) {
      case 2:
        return 300.0 / 900.0;
      case 3:
        return 600.0 / 900.0;
      case 4:
        return 1.0;
      case 5:
        return 1800.0 / 900.0;
      default:
        return std::nullopt;
    }
  }
  if (link == Link::kPcie && generation >= 3 && generation <= 6) {
    return std::ldexp(1.0, generation - kAssumedPcieGeneration);
  }
  return std::nullopt;
}

}  // namespace

LinkCost gpuLinkCost(Link link, int generation) {
  LinkCost cost = defaultLinkCost(link);
  const std::optional<double> rate = rateAgainstDefault(link, generation);
  if (!rate || *rate == 1.0) return cost;
  const int from = link == Link::kNvlink ? kMeasuredNvlinkGeneration : kAssumedPcieGeneration;
  cost.bandwidthGBs *= *rate;
  cost.source += " scaled from generation " + std::to_string(from) + " to " + std::to_string(generation) +
                 " by the generations' rates";
  return cost;
}

const char* scheduleName(Schedule schedule) {
  switch (schedule) {
    case Schedule::kLL:
      return "ll";
    case Schedule::kDirect:
      return "direct";
    case Schedule::kTwoShot:
      return "twoshot";
    case Schedule::kRing:
      return "ring";
    case Schedule::kDoubling:
      return "doubling";
    case Schedule::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

std::optional<Collective> parseCollective(const std::string& name) {
  if (name == "allreduce") return Collective::kAllreduce;
  if (name == "allgather") return Collective::kAllgather;
  if (name == "reducescatter" || name == "reduce_scatter") return Collective::kReduceScatter;
  return std::nullopt;
}

namespace {

// steps * latency + bytes / bandwidth, in microseconds.
double cost(double steps, double bytes, const LinkCost& link) {
  return steps * link.latencyUs + bytes / (link.bandwidthGBs * 1e3);
}

// `bytes` read and written by a rank in its own memory, where the link prices them.
double localCost(double bytes, const LinkCost& link) { return link.localGBs > 0 ? bytes / (link.localGBs * 1e3) : 0; }

// An allreduce of `n` bytes among `p` ranks joined by `link` (one host, or the bottleneck link of several). A step
// is one message (or one batch of messages sent at once) and its latency; every schedule but LL ends with one more,
// the synchronisation that lets the buffers be reused (LL's flags ride inside its data).
// The waits of a schedule are priced apart from its steps: `waits` flags of peers read (link.perPeerUs each).
// What a rank moves in its own memory, where the link prices it (LinkCost::localGBs):
// - direct reads its input, writes it to its slot, reads it back to reduce and writes the result: 4n;
// - two-shot copies the (p - 1) / p of its input its peers reduce, reduces its own block from its input into its slot
//   and reads it back, and writes the result: (3 + 1/p) n;
// - a ring step copies n/p into the slot, reads the rank's own n/p and writes the result, 2 (p - 1) steps;
// - a doubling round copies n into the slot, reads its own n and writes the result.
std::optional<double> flatAllreduce(Schedule s, double n, int p, const LinkCost& link, bool oneHost) {
  if (p == 1) return 0.0;
  const double peers = p - 1;
  const double wait = link.perPeerUs;
  switch (s) {
    case Schedule::kLL:
      if (!oneHost || !link.ll) return std::nullopt;
      return cost(1, 2 * peers * n, link) + peers * wait;  // half of every line is flags
    case Schedule::kDirect:
      return cost(2, peers * n, link) + peers * wait + localCost(4 * n, link);
    case Schedule::kTwoShot:
      if (!oneHost) return std::nullopt;
      return cost(3, 2 * peers / p * n, link) + 2 * peers * wait + localCost((3 + 1.0 / p) * n, link);
    case Schedule::kRing:
      return cost(2 * peers + 1, 2 * peers / p * n, link) + 2 * peers * wait + localCost(8 * peers / p * n, link);
    case Schedule::kDoubling: {
      const double rounds = std::ceil(std::log2(p));
      // Where p is no power of two, the ranks past the largest power fold in first and are told at the end.
      const double extra = (1 << static_cast<int>(std::floor(std::log2(p)))) == p ? 0 : 2;
      return cost(rounds + extra + 1, (rounds + extra) * n, link) + (rounds + extra) * wait +
             localCost(4 * (rounds + extra) * n, link);
    }
    case Schedule::kHierarchical:
      return std::nullopt;
  }
  return std::nullopt;
}

// Allgather (and reduce-scatter, its mirror) of `n` bytes in all among `p` ranks: each rank's n/p reaches every
// peer. Direct: every rank sends its piece to every peer in one step; ring: p - 1 steps.
std::optional<double> flatGather(Schedule s, double n, int p, const LinkCost& link, bool oneHost) {
  if (p == 1) return 0.0;
  const double peers = p - 1;
  switch (s) {
    case Schedule::kDirect:
      if (!oneHost) return std::nullopt;
      return cost(2, peers / p * n, link);
    case Schedule::kRing:
      return cost(peers + 1, peers / p * n, link);
    default:
      return std::nullopt;
  }
}

// Per rank, the share of its host's NICs when all of its host's ranks cross at once: the NICs split among them,
// and no rank on more NICs than it stripes over.
LinkCost nicShare(const Cluster& c) {
  LinkCost share = c.inter;
  const double perRank = std::min(static_cast<double>(c.nics) / c.ranksPerNode, static_cast<double>(c.rails));
  share.bandwidthGBs = c.inter.bandwidthGBs * perRank;
  return share;
}

// A flat schedule crosses between hosts with one rank per host and direction at a time: that rank stripes over
// as many NICs as it has rails.
LinkCost crossingRank(const Cluster& c) {
  LinkCost link = c.inter;
  link.bandwidthGBs = c.inter.bandwidthGBs * std::min(c.nics, c.rails);
  return link;
}

}  // namespace

std::optional<double> projectUs(Collective collective, Schedule schedule, std::size_t bytes, const Cluster& c) {
  const double n = static_cast<double>(bytes);
  const int p = c.ranks();
  const int local = c.ranksPerNode;
  const bool oneHost = c.nodes == 1;
  if (p < 1 || local < 1) return std::nullopt;
  if (schedule == Schedule::kHierarchical) {
    if (oneHost || local == 1) return std::nullopt;
    // Inside each host a direct reduce-scatter (allgather) of n; between hosts, each local rank's ring over its
    // n / local bytes, all local ranks at once on the host's NICs.
    const double inside = *flatGather(Schedule::kDirect, n, local, c.intra, true);
    const double shard = n / local;
    if (collective == Collective::kAllreduce) {
      return inside + *flatAllreduce(Schedule::kRing, shard, c.nodes, nicShare(c), false) + inside;
    }
    // Allgather: first a ring between hosts gathers each local rank's n / local bytes, then the hosts' ranks
    // exchange those directly; reduce-scatter is the mirror image, at the same cost.
    return *flatGather(Schedule::kRing, shard, c.nodes, nicShare(c), false) + inside;
  }
  // Flat schedules over several hosts: the ring (or doubling) crosses between hosts once per host and step, on
  // the crossing rank's NICs, which are slower than anything inside a host.
  // (Inside one host the link is used as it is: no copy, whose name would cost an allocation.)
  if (oneHost) {
    if (collective == Collective::kAllreduce) return flatAllreduce(schedule, n, p, c.intra, true);
    return flatGather(schedule, n, p, c.intra, true);
  }
  const LinkCost link = crossingRank(c);
  if (collective == Collective::kAllreduce) return flatAllreduce(schedule, n, p, link, false);
  return flatGather(schedule, n, p, link, false);
}

std::vector<Projection> projectAll(Collective collective, std::size_t bytes, const Cluster& cluster) {
  std::vector<Projection> out;
  for (Schedule s : {Schedule::kLL, Schedule::kDirect, Schedule::kTwoShot, Schedule::kRing, Schedule::kDoubling,
                     Schedule::kHierarchical}) {
    if (const auto us = projectUs(collective, s, bytes, cluster)) out.push_back({s, *us});
  }
  std::stable_sort(out.begin(), out.end(), [](const Projection& a, const Projection& b) { return a.us < b.us; });
  return out;
}

double busBandwidthGBs(Collective collective, std::size_t bytes, int ranks, double us) {
  if (us <= 0 || ranks < 1) return 0;
  const double algbw = static_cast<double>(bytes) / (us * 1e3);
  const double p = ranks;
  return collective == Collective::kAllreduce ? algbw * 2 * (p - 1) / p : algbw * (p - 1) / p;
}

}  // namespace braid::tuning
