// What joined braid's ranks in a benchmark run, as the communicator chose it, in words for the results' meta
// (machine.link): the host transport, and over TCP the interfaces this rank's streams use. Header-only, as it reads
// libbraid's internals: `braid bench` and braid-bench-device (which links them too) both include it.
#pragma once

#include <string>
#include <vector>

#include "algorithms/host/net/net_engine.hpp"
#include "bench/machine_info.hpp"
#include "braid/braid.hpp"
#include "core/communicator_impl.hpp"
#include "transport/tcp/tcp_mesh.hpp"

namespace braid::tools {

/// "shared memory", "TCP over eth0, eth1 (4 streams per peer), 2 hosts", "TCP over loopback (2 streams per
/// peer)", "the memory of one process (thread ranks)". Call it after the run's calls, from the thread that made them.
inline std::string braidLink(Communicator& comm) {
  core::CommunicatorImpl& impl = comm.impl();
  const std::string transport = impl.transportName();
  std::string link;
  if (transport == "shm") {
    link = "shared memory";
  } else if (transport == "memory") {
    link = "the memory of one process (thread ranks)";
  } else if (transport == "tcp") {
    std::vector<std::string> addresses;
    int streams = 0;
    if (auto* net = dynamic_cast<host::NetEngine*>(&impl.engine())) {
      streams = net->mesh().streamsPerPeer();
      for (int peer = 0; peer < comm.size(); ++peer) {
        if (peer == comm.rank()) continue;
        for (const auto& address : net->mesh().streamAddresses(peer)) addresses.push_back(address);
      }
    }
    std::string interfaces;
    for (const auto& name : interfacesOf(addresses)) interfaces += (interfaces.empty() ? "" : ", ") + name;
    link = "TCP over " + (interfaces.empty() ? std::string("(no peer)") : interfaces);
    if (streams > 0) link += " (" + std::to_string(streams) + (streams == 1 ? " stream" : " streams") + " per peer)";
  } else {
    link = transport;
  }
  if (comm.hostCount() > 1) link += ", " + std::to_string(comm.hostCount()) + " hosts";
  return link;
}

}  // namespace braid::tools
