// Communicator::linkDescription: what joins this rank to its peers, in the words a benchmark's results record
// (machine.link): the host transport, and over the network what the transport says of its links.
#include <string>

#include "algorithms/host/net/net_engine.hpp"
#include "base/error.hpp"
#include "core/communicator_impl.hpp"

namespace braid::core {

std::string CommunicatorImpl::linkDescription() {
  const std::string transport = transportName();
  std::string link = transport;
  if (transport == "shm") {
    link = "shared memory";
  } else if (transport == "memory") {
    link = "the memory of one process (thread ranks)";
  } else if (auto* net = dynamic_cast<host::NetEngine*>(&engine())) {
    link = net->transport().linkDescription();
  }
  if (placement_.hosts() > 1) link += strCat(", ", placement_.hosts(), " hosts");
  return link;
}

}  // namespace braid::core
