// Where the ranks of a communicator run, learned at its creation: every rank tells the others its host (identity
// and name), so that the communicator (and whoever asks it) knows the hosts, each rank's host, and this rank's
// place among the ranks of its own host, and what the selectors weigh of each host (CPUs, NUMA nodes, NICs). Pure
// data; core/create.cpp gathers it over the bootstrap store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "braid/topology.hpp"

namespace braid::core {

struct RankHost {
  std::string identity;   ///< transport::hostIdentity(): equal strings mean one host (shared memory possible)
  std::string name;       ///< the host's name, for messages
  std::vector<int> cpus;  ///< the CPUs the rank may run on (its affinity mask); empty: unknown
  int numaNode = -1;      ///< the NUMA node holding all of those CPUs; -1: several, or unknown
  int nicMbps = 0;        ///< the rate of the NICs its TCP traffic would take (its rails together); 0: unknown
  int cpuQuota = 0;       ///< the CPUs its cgroup's quota keeps busy, rounded up; 0: no quota
  std::uint64_t cpuQuotaGroup = 0;  ///< the cgroup that quota is set on (topology::CgroupLimits::cpusGroup)
};

struct Placement {
  std::vector<int> hostOf;             ///< per rank: its host, numbered 0.. in the order of each host's lowest rank
  std::vector<std::string> hostNames;  ///< per host
  int localRank = 0;                   ///< this rank's index among the ranks of its host (in rank order)
  int localSize = 1;                   ///< ranks on this rank's host
  /// Some machine (one boot id) runs two ranks or more, whatever their hosts: BRAID_HOST_ID and network
  /// namespaces split one machine into several hosts, whose ranks may still share a GPU. The same on every rank.
  bool machineRunsSeveralRanks = false;
  /// The CPUs the ranks of this rank's host may run on together (the union of their masks), the same on each of
  /// them, so that their selectors weigh one machine and choose alike; 0 where some rank's mask is unknown. Where
  /// every one of them runs under a cgroup CPU quota, at most those quotas added up, each cgroup's once: the ranks
  /// of one container share its quota.
  int localCpus = 0;
  /// The NUMA nodes the ranks of this rank's host run on, the same on each of them; 0 where some rank's is unknown
  /// or spans several.
  int localNumaNodes = 0;
  /// The slowest rank's NICs in Mbit/s, over every host: what a TCP step between hosts can move at most; 0 where
  /// some rank's rate is unknown.
  int slowestNicMbps = 0;

  int hosts() const { return static_cast<int>(hostNames.size()); }

  /// The machine of a host identity ("<boot id>/<network namespace>[/id:<BRAID_HOST_ID>]", transport::hostIdentity):
  /// its boot id. Namespaces and BRAID_HOST_ID split a machine into hosts, not into machines.
  static std::string machineOf(const std::string& identity) { return identity.substr(0, identity.find('/')); }
  /// The placement seen from `rank`, given every rank's host.
  static Placement of(const std::vector<RankHost>& ranks, int rank);
  /// Lines of a rank's host, CPUs, NUMA node and NIC rate, and back (what ranks exchange); a text of fewer lines
  /// leaves the rest unknown.
  static std::string encode(const RankHost& host);
  static RankHost decode(const std::string& text);
};

/// The NUMA node of `host` that holds every CPU of `cpus`; -1 when they span several, or nothing is known.
int numaNodeOf(const topology::Topology& host, const std::vector<int>& cpus);
/// The rate of `host`'s NICs named `names` together, in Mbit/s; 0 when one of them is unknown, loopback, or its
/// rate is not told (virtual NICs).
int nicMbpsOf(const topology::Topology& host, const std::vector<std::string>& names);

/// "0-3,8,10-11", and back; InvalidArgument names a malformed list.
std::string formatCpuList(const std::vector<int>& cpus);
std::vector<int> parseCpuList(const std::string& text);

}  // namespace braid::core
