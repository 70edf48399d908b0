// What braid would do, asked without a communicator: for tools (braid explain) and for users planning a job. Each
// answer comes from the same code the communicator runs, with the settings of the environment.
#pragma once

#include <cstddef>
#include <string>

namespace braid {

/// How an allreduce (or reduce) of `bytes` per rank among `ranks` ranks of one host over shared memory would run
/// on a host whose processes may use `cores` cores (0: this host's): the algorithm the selector chooses, why, and
/// the cost it projects for each algorithm it considered. InvalidArgument for ranks < 1 or a malformed setting.
std::string explainSharedMemoryAllreduce(std::size_t bytes, int ranks, int cores = 0);

}  // namespace braid
