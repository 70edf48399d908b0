#include "braid/introspect.hpp"

#include "base/config.hpp"
#include "base/deadline.hpp"
#include "base/error.hpp"
#include "bootstrap/store.hpp"
#include "core/communicator_access.hpp"
#include "core/engine_selectors.hpp"
#include "core/explain_call.hpp"
#include "core/this_host.hpp"
#include "tuning/selector.hpp"

namespace braid {

namespace core {

std::string explainSharedMemoryAllreduce(std::size_t bytes, int ranks, int cores, const Settings& settings) {
  if (ranks < 1) fail(ErrorCode::kInvalidArgument, {}, "explain: ", ranks, " ranks: at least 1");
  if (cores < 0) fail(ErrorCode::kInvalidArgument, {}, "explain: ", cores, " cores: at least 0");
  // Cores given: the host they describe is not this one, so nothing here need be detected.
  const int cpus = cores > 0 ? cores : tuning::machineOf(thisHost(), ranks, tuning::Link::kShm).usableCpus;
  return sharedMemorySelector(ranks, HostLayout{.ranks = ranks, .cpus = cpus}, settings).explain(bytes);
}

std::string explainTcpAllreduce(std::size_t bytes, int ranks, int nicMbps, const Settings& settings) {
  if (ranks < 1) fail(ErrorCode::kInvalidArgument, {}, "explain: ", ranks, " ranks: at least 1");
  if (nicMbps < 0) fail(ErrorCode::kInvalidArgument, {}, "explain: ", nicMbps, " Mbit/s: at least 0");
  return tcpSelector(ranks, nicMbps, settings).explain(bytes);
}

std::string explainGpuAllreduce(std::size_t bytes, int ranks, const GpuAllreduceFacts& facts,
                                const Settings& settings) {
  if (ranks < 1) fail(ErrorCode::kInvalidArgument, {}, "explain: ", ranks, " ranks: at least 1");
  const device::DeviceFacts f{.channel = facts.peerAccess, .shared = facts.sharedPath, .processes = facts.processes};
  const device::GpuLinks links{.nvlink = facts.nvlink, .generation = facts.linkGeneration, .gpus = facts.gpus};
  return deviceSelector(f, links, ranks, settings).explain(bytes);
}

}  // namespace core

std::string explainSharedMemoryAllreduce(std::size_t bytes, int ranks, int cores) {
  return core::explainSharedMemoryAllreduce(bytes, ranks, cores, Settings::fromEnvironment());
}

std::string explainTcpAllreduce(std::size_t bytes, int ranks, int nicMbps) {
  return core::explainTcpAllreduce(bytes, ranks, nicMbps, Settings::fromEnvironment());
}

std::string explainGpuAllreduce(std::size_t bytes, int ranks, const GpuAllreduceFacts& facts) {
  return core::explainGpuAllreduce(bytes, ranks, facts, Settings::fromEnvironment());
}

std::string explainCall(const topology::Topology& machine, const CallShape& call) {
  return core::explainCall(machine, call, Settings::fromEnvironment());
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
