// What braid would do, asked without a communicator: for tools (braid explain) and for users planning a job. Each
// answer comes from the same code the communicator runs, with the settings of the environment.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "braid/topology.hpp"

namespace braid {

class Communicator;

/// How an allreduce (or reduce) of `bytes` per rank among `ranks` ranks of one host over shared memory would run
/// on a host whose processes may use `cores` cores (0: this host's): the algorithm the selector chooses, why, and
/// the cost it projects for each algorithm it considered. InvalidArgument for ranks < 1 or a malformed setting.
std::string explainSharedMemoryAllreduce(std::size_t bytes, int ranks, int cores = 0);

/// How an allreduce of `bytes` per rank among `ranks` ranks joined by TCP would run, their slowest NICs moving
/// `nicMbps` Mbit/s (0: unknown, or loopback): as above. Its first word names the algorithm: direct, doubling or ring
/// (the one every other collective's direct-or-pipelined choice follows too). InvalidArgument for ranks < 1 or a
/// malformed setting.
std::string explainTcpAllreduce(std::size_t bytes, int ranks, int nicMbps = 0);

/// What decides how an allreduce of GPU buffers among the ranks of one host runs.
struct GpuAllreduceFacts {
  bool peerAccess = true;   ///< every GPU maps every other's memory (braid's kernels can run)
  bool nvlink = true;       ///< every pair of GPUs is joined by NVLink (else PCIe)
  bool sharedPath = false;  ///< the ranks share a GPU and take the shared-GPU path
  bool processes = false;   ///< on that path, some of them are different processes
  int gpus = 0;             ///< GPUs the ranks use (0: unknown)
  int linkGeneration = 0;   ///< the NVLink (or PCIe) generation of their links (0: unknown)
};
/// How an allreduce of `bytes` per rank of GPU buffers among `ranks` ranks of one host would run: as above, its
/// first word the algorithm (ll, oneshot, twoshot, staged or shared). InvalidArgument for ranks < 1 or a malformed
/// setting.
std::string explainGpuAllreduce(std::size_t bytes, int ranks, const GpuAllreduceFacts& facts);

/// One call, as braid explain asks about it.
struct CallShape {
  std::string collective = "allreduce";  ///< allreduce, reduce, broadcast, allgather, reducescatter, alltoall,
                                         ///< alltoallv, gather, scatter, barrier, allgatherv or sendrecv
  std::size_t bytes = 0;                 ///< per rank
  bool device = false;                   ///< GPU buffers
  int ranks = 2;                         ///< in all
  int hosts = 1;                         ///< ranks spread evenly over this many hosts like `machine`
};
/// Which transport and algorithm a communicator on hosts like `machine` (topology::detect(), or a described one)
/// would use for `call`, and why, in lines of text: the answers of the selectors above and of the thresholds
/// between engines (the hierarchy across hosts, the shared-GPU path). InvalidArgument for a collective braid does
/// not have, a shape with fewer ranks than hosts, or a malformed setting.
std::string explainCall(const topology::Topology& machine, const CallShape& call);

/// Adds `mine` over every rank of `comm` through the store it was created over rather than through its
/// collectives: for checkers that must not trust the collectives they check (braid bench's count of wrong
/// elements). Collective: every rank calls it with the same `key`, which no earlier call used on this
/// communicator; it returns once every rank has read the sum. nullopt where `comm` was made without a store
/// (thread ranks over memory); Timeout after BRAID_TIMEOUT.
std::optional<long long> sumThroughStore(Communicator& comm, const std::string& key, long long mine);

}  // namespace braid
