// Where the ranks of a communicator run, learned at its creation: every rank tells the others its host (identity
// and name), so that the communicator (and whoever asks it) knows the hosts, each rank's host, and this rank's
// place among the ranks of its own host. Pure data; core/create.cpp gathers it over the bootstrap store.
#pragma once

#include <string>
#include <vector>

namespace braid::core {

struct RankHost {
  std::string identity;   ///< transport::hostIdentity(): equal strings mean one host (shared memory possible)
  std::string name;       ///< the host's name, for messages
  std::vector<int> cpus;  ///< the CPUs the rank may run on (its affinity mask); empty: unknown
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
  /// them, so that their selectors weigh one machine and choose alike; 0 where some rank's mask is unknown.
  int localCpus = 0;

  int hosts() const { return static_cast<int>(hostNames.size()); }

  /// The machine of a host identity ("<boot id>/<network namespace>[/id:<BRAID_HOST_ID>]", transport::hostIdentity):
  /// its boot id. Namespaces and BRAID_HOST_ID split a machine into hosts, not into machines.
  static std::string machineOf(const std::string& identity) { return identity.substr(0, identity.find('/')); }
  /// The placement seen from `rank`, given every rank's host.
  static Placement of(const std::vector<RankHost>& ranks, int rank);
  /// Lines of a rank's host and CPUs, and back (what ranks exchange); a text of two lines has no CPUs.
  static std::string encode(const RankHost& host);
  static RankHost decode(const std::string& text);
};

/// "0-3,8,10-11", and back; InvalidArgument names a malformed list.
std::string formatCpuList(const std::vector<int>& cpus);
std::vector<int> parseCpuList(const std::string& text);

}  // namespace braid::core
