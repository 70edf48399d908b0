// What the TCP mesh's streams run over: each stream's addresses, and the link as a benchmark's results record it
// (machine.link): the interfaces this rank's streams use and how many streams per peer.
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "transport/tcp/interfaces.hpp"
#include "transport/tcp/tcp_mesh.hpp"
#include "transport/tcp/tcp_mesh_parts.hpp"

namespace braid::tcp {

namespace {

// The interface that holds each local address ("loopback" for any loopback one), each name once, in order; an
// address no interface holds is named as it is.
std::vector<std::string> interfaceNames(const std::vector<std::string>& hosts) {
  std::vector<Interface> interfaces;
  try {
    interfaces = listInterfaces();
  } catch (const Error&) {
    // Without getifaddrs the addresses name themselves.
  }
  std::vector<std::string> names;
  for (std::string host : hosts) {
    host = host.substr(0, host.find('%'));  // an IPv6 link-local address's scope
    std::string name = host;
    for (const Interface& i : interfaces) {
      if (i.address == host) name = i.loopback ? "loopback" : i.name;
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

}  // namespace

std::vector<std::string> TcpMesh::streamAddresses(int p) {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const Stream* st : peer(p).streams) {
    // A lower rank accepted (the pair's address is its own end), a higher one dialled (the far end).
    if (!st->socket.valid()) {
      out.emplace_back("(closed)");
    } else {
      out.push_back(p < rank_ ? st->socket.peer() : st->socket.localAddress().toString());
    }
  }
  return out;
}

std::vector<std::string> TcpMesh::localStreamHosts(int p) {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const Stream* st : peer(p).streams) {
    if (st->socket.valid()) out.push_back(st->socket.localAddress().host);
  }
  return out;
}

std::string TcpMesh::linkDescription() {
  std::vector<std::string> hosts;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    for (const std::string& host : localStreamHosts(p)) hosts.push_back(host);
  }
  std::string interfaces;
  for (const std::string& name : interfaceNames(hosts)) interfaces += (interfaces.empty() ? "" : ", ") + name;
  const int streams = options_.streams;
  return strCat("TCP over ", interfaces.empty() ? std::string("(no peer)") : interfaces, " (", streams,
                streams == 1 ? " stream" : " streams", " per peer)");
}

}  // namespace braid::tcp
