#include "core/hierarchy.hpp"

#include <algorithm>

#include "base/data_type.hpp"
#include "base/error.hpp"
#include "bootstrap/prefix_store.hpp"
#include "core/communicator_impl.hpp"
#include "core/create.hpp"

namespace braid::core {

bool Hierarchy::fits(const Placement& p) {
  if (p.hosts() < 2) return false;
  std::vector<int> perHost(static_cast<std::size_t>(p.hosts()), 0);
  for (int h : p.hostOf) ++perHost[static_cast<std::size_t>(h)];
  for (int n : perHost) {
    if (n != perHost.front()) return false;
  }
  return perHost.front() > 1;
}

std::unique_ptr<Hierarchy> Hierarchy::make(CommunicatorImpl& parent, const OpEnv& env) {
  const Placement& p = parent.placement();
  const int me = parent.rank();
  std::vector<int> local, cross;
  std::vector<int> seen(static_cast<std::size_t>(p.hosts()), 0);  // ranks of each host so far: their local ranks
  for (int r = 0; r < parent.size(); ++r) {
    const int host = p.hostOf[static_cast<std::size_t>(r)];
    const int localRank = seen[static_cast<std::size_t>(host)]++;
    if (host == p.hostOf[static_cast<std::size_t>(me)]) local.push_back(r);
    if (localRank == p.localRank) cross.push_back(r);
  }
  const auto level = [me](std::vector<int> ranks) {
    const int mine = static_cast<int>(std::find(ranks.begin(), ranks.end(), me) - ranks.begin());
    return HierarchyLevel{.ranks = std::move(ranks), .mine = mine};
  };
  HierarchyPlace place{.inside = level(local), .between = level(cross)};
  const Settings& settings = parent.settings();
  // As long as a creation may take (the levels are made as a communicator is), and ended by an abort.
  const Deadline deadline = Deadline::after(settings.timeoutSeconds).cancellable(env.aborted);
  // Each level meets under a key of its own in the parent's store (a hierarchy is made once per communicator): its
  // host's for the ranks inside it, its local rank's for the ranks between hosts. Every rank joins the level inside
  // first, then the one between: the same order on every member of each.
  const std::shared_ptr<bootstrap::Store>& store = parent.store();
  if (!store)
    fail(ErrorCode::kInternal, env.context, "a communicator across hosts has no store to make its levels over");
  auto localStore =
      std::make_shared<bootstrap::PrefixStore>(store, strCat("hierarchy/host", p.hostOf[static_cast<std::size_t>(me)]));
  auto crossStore = std::make_shared<bootstrap::PrefixStore>(store, strCat("hierarchy/local", p.localRank));
  const HostLayout host{.ranks = p.localSize, .cpus = p.localCpus, .numaNodes = p.localNumaNodes};
  const HierarchyLevel& in = place.inside;
  const HierarchyLevel& across = place.between;
  try {
    std::unique_ptr<Engine> inside = settings.transport == "tcp"
                                         ? joinTcpEngine(*localStore, in.mine, in.size(), settings, 0, deadline)
                                         : joinShmEngine(*localStore, in.mine, in.size(), settings, host, deadline);
    std::unique_ptr<Engine> between =
        joinTcpEngine(*crossStore, across.mine, across.size(), settings, p.slowestNicMbps, deadline);
    auto insideStack = std::make_unique<EngineStack>(in.mine, in.size(), std::move(inside), settings);
    auto betweenStack = std::make_unique<EngineStack>(across.mine, across.size(), std::move(between), settings);
    if (p.machineRunsSeveralRanks) {
      betweenStack->attachSharedGpu(gpuSharedAcrossHosts(*crossStore, across.mine, across.size(), deadline));
    }
    return std::unique_ptr<Hierarchy>(new Hierarchy(std::move(place), std::move(insideStack), std::move(betweenStack)));
  } catch (const Error& e) {
    // An abort ends the joins' waits, which then read as timeouts: said as what it was.
    if (env.aborted != nullptr && env.aborted->load(std::memory_order_acquire)) {
      fail(ErrorCode::kAborted, env.context,
           "the communicator was aborted while its hierarchical allreduce was set up");
    }
    fail(e.code(), env.context, "setting up the hierarchical allreduce: ", e.message());
  }
}

void Hierarchy::allreduce(const Route& route, const void* send, void* recv, std::size_t count, DataType type,
                          ReduceOp op, const OpEnv& env) {
  try {
    Engine& inside = inside_->forRoute(route, env);
    Engine& between = between_->forRoute(route, env);
    algorithm_.run(inside, between, send, recv, count, type, op, env);
  } catch (const Error& e) {
    // The ranks of the other level, or of a later step, may be waiting for this one: closing both levels tells
    // them at once (PeerLost) rather than at their timeout. The levels are then out of step for good, and so is the
    // communicator (CommunicatorImpl::allreduce breaks it).
    abort();
    throw;
  }
}

void Hierarchy::abort() {
  inside_->abort();
  between_->abort();
}

std::optional<Error> Hierarchy::asyncError(const CallContext& ctx) const {
  if (std::optional<Error> e = inside_->asyncError(ctx)) return e;
  return between_->asyncError(ctx);
}

std::string Hierarchy::describe(std::size_t bytes) const {
  const std::size_t shard = bytes / static_cast<std::size_t>(algorithm_.place().inside.size());
  const Engine& between = between_->host();
  return strCat("hierarchical (reduce-scatter and allgather over ", inside_->host().transportName(), " inside hosts, ",
                between.transportName(), "/", between.allreduceAlgorithm(shard), " between)");
}

}  // namespace braid::core
