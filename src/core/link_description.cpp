// Communicator::linkDescription: what joins this rank to its peers, in the words a benchmark's results record
// (machine.link): the host transport, and over TCP the interfaces this rank's streams use and how many per peer.
#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/host/net/net_engine.hpp"
#include "base/error.hpp"
#include "core/communicator_impl.hpp"
#include "transport/tcp/interfaces.hpp"
#include "transport/tcp/tcp_mesh.hpp"

namespace braid::core {

namespace {

// The interface that holds each local address ("loopback" for any loopback one), each name once, in order; an
// address no interface holds is named as it is.
std::vector<std::string> interfaceNames(const std::vector<std::string>& hosts) {
  std::vector<tcp::Interface> interfaces;
  try {
    interfaces = tcp::listInterfaces();
  } catch (const Error&) {
    // Without getifaddrs the addresses name themselves.
  }
  std::vector<std::string> names;
  for (std::string host : hosts) {
    host = host.substr(0, host.find('%'));  // an IPv6 link-local address's scope
    std::string name = host;
    for (const tcp::Interface& i : interfaces) {
      if (i.address == host) name = i.loopback ? "loopback" : i.name;
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

}  // namespace

std::string CommunicatorImpl::linkDescription() {
  const std::string transport = transportName();
  std::string link = transport;
  if (transport == "shm") {
    link = "shared memory";
  } else if (transport == "memory") {
    link = "the memory of one process (thread ranks)";
  } else if (auto* net = dynamic_cast<host::NetEngine*>(&engine())) {
    std::vector<std::string> hosts;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      for (const std::string& host : net->mesh().localStreamHosts(peer)) hosts.push_back(host);
    }
    std::string interfaces;
    for (const std::string& name : interfaceNames(hosts)) interfaces += (interfaces.empty() ? "" : ", ") + name;
    const int streams = net->mesh().streamsPerPeer();
    link = strCat("TCP over ", interfaces.empty() ? std::string("(no peer)") : interfaces, " (", streams,
                  streams == 1 ? " stream" : " streams", " per peer)");
  }
  if (placement_.hosts() > 1) link += strCat(", ", placement_.hosts(), " hosts");
  return link;
}

}  // namespace braid::core
