// Building a TCP mesh through the bootstrap store: every rank listens on its chosen interfaces (rails), publishes
// their addresses, connects `streams` sockets to each lower rank (stream s to that rank's rail s mod its rails) and
// accepts them from each higher one, each with the authenticated handshake (transport/tcp/handshake.hpp). Frames
// spread over a pair's streams, so several rails stripe every large message across the networks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/deadline.hpp"
#include "bootstrap/store.hpp"
#include "transport/tcp/tcp_mesh.hpp"

namespace braid::bootstrap {

struct MeshRendezvous {
  std::string prefix;      // store keys of this communicator ("tcp" for a world, "split/3/..." for others)
  std::string listenHost;  // addresses peers dial, comma-separated, one per rail; empty: tcp::railInterfaces(ifname)
  std::string ifname;      // BRAID_IFNAME, for an empty listenHost
  std::string token;       // BRAID_TOKEN: the secret when set; otherwise rank 0 makes one and hands it over the store
  tcp::MeshOptions options;
};

/// The interfaces a mesh made with `ifname` (BRAID_IFNAME) listens on, one per rail, by name; empty where none
/// would do (the mesh's own creation then names why).
std::vector<std::string> meshInterfaceNames(const std::string& ifname);

/// Connects the mesh. Connections that fail the handshake (garbage, a wrong secret, another communicator) are
/// dropped with a warning and the wait goes on; Timeout names the ranks still missing.
std::unique_ptr<tcp::TcpMesh> joinTcpMesh(Store& store, int rank, int size, const MeshRendezvous& how,
                                          Deadline deadline);

}  // namespace braid::bootstrap
