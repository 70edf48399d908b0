#include "braid/introspect.hpp"

#include "algorithms/device/device_algorithms.hpp"
#include "algorithms/host/local_collectives.hpp"
#include "algorithms/host/net/net_engine.hpp"
#include "base/config.hpp"
#include "base/deadline.hpp"
#include "base/error.hpp"
#include "bootstrap/store.hpp"
#include "core/communicator_access.hpp"
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

std::string explainTcpAllreduce(std::size_t bytes, int ranks) {
  if (ranks < 1) fail(ErrorCode::kInvalidArgument, {}, "explain: ", ranks, " ranks: at least 1");
  // As joinTcp makes it: the ranks may be on several hosts, so no oversubscription is assumed.
  const tuning::Selector selector(host::netAllreduceAlgorithms(),
                                  tuning::Machine{.ranks = ranks, .usableCpus = 0, .link = tuning::Link::kTcp},
                                  Settings::fromEnvironment(), tuning::Path::kHost);
  return selector.explain(bytes);
}

std::string explainGpuAllreduce(std::size_t bytes, int ranks, const GpuAllreduceFacts& facts) {
  if (ranks < 1) fail(ErrorCode::kInvalidArgument, {}, "explain: ", ranks, " ranks: at least 1");
  const Settings settings = Settings::fromEnvironment();
  const device::DeviceFacts f{.channel = facts.peerAccess, .shared = facts.sharedPath, .processes = facts.processes};
  const tuning::Selector selector(
      device::allreduceAlgorithms(f, settings),
      tuning::Machine{
          .ranks = ranks, .usableCpus = 0, .link = facts.nvlink ? tuning::Link::kNvlink : tuning::Link::kPcie},
      settings, tuning::Path::kDevice);
  return selector.explain(bytes);
}

std::optional<long long> sumThroughStore(Communicator& comm, const std::string& key, long long mine) {
  core::CommunicatorImpl& impl = core::CommunicatorAccess::impl(comm);
  const auto& store = impl.store();
  if (!store) return std::nullopt;
  const int n = comm.size(), me = comm.rank();
  if (n == 1) return mine;
  // A split's store is a prefixed view of its parent's, so keys of different communicators cannot meet.
  const std::string at = strCat("braid-sum/", key);
  const Deadline deadline = Deadline::after(impl.settings().timeoutSeconds);
  store->add(at + "/sum", mine);
  bootstrap::barrier(*store, at + "/counted", me, n, deadline);
  const long long total = store->add(at + "/sum", 0);
  // Rank 0 (where the store's server usually lives) leaves last: once it returns it may exit, and a rank still
  // reading the total would lose the store.
  if (me != 0) {
    if (store->add(at + "/read", 1) == n - 1) store->set(at + "/all-read", "1");
  } else {
    store->get(at + "/all-read", deadline);
  }
  return total;
}

}  // namespace braid
