#include "braid/introspect.hpp"

#include "algorithms/host/local_collectives.hpp"
#include "base/config.hpp"
#include "base/error.hpp"
#include "core/this_host.hpp"
#include "tuning/selector.hpp"

namespace braid {

std::string explainSharedMemoryAllreduce(std::size_t bytes, int ranks, int cores) {
  if (ranks < 1) fail(ErrorCode::kInvalidArgument, {}, "explain: ", ranks, " ranks: at least 1");
  if (cores < 0) fail(ErrorCode::kInvalidArgument, {}, "explain: ", cores, " cores: at least 0");
  // Cores given: the host they describe is not this one, so nothing here need be detected.
  const tuning::Machine machine = cores > 0 ? tuning::Machine{.ranks = ranks, .usableCpus = cores}
                                            : tuning::machineOf(core::thisHost(), ranks, tuning::Link::kShm);
  const tuning::Selector selector(host::localAllreduceAlgorithms(), machine, Settings::fromEnvironment(),
                                  tuning::Path::kHost);
  return selector.explain(bytes);
}

}  // namespace braid
