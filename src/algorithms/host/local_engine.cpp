#include "algorithms/host/local_engine.hpp"

#include "base/data_type.hpp"
#include "base/error.hpp"

namespace braid::host {

LocalEngine::LocalEngine(std::unique_ptr<transport::LocalGroup> group, const transport::FabricLayout& layout,
                         std::function<const tuning::AlgorithmDescriptor&(std::size_t)> chooseReduce,
                         std::function<std::string(std::size_t)> explainReduce,
                         const LocalCollectives::Options& options, double heartbeatInterval, double heartbeatTimeout)
    : fabric_(std::move(group), layout),
      collectives_(fabric_, options),
      p2p_(fabric_, options.singleCopy),
      choose_(std::move(chooseReduce)),
      explain_(std::move(explainReduce)),
      heartbeat_(heartbeatInterval, [this] { fabric_.beat(); }) {
  fabric_.setHeartbeatTimeout(heartbeatInterval > 0 ? heartbeatTimeout : 0);
}

void LocalEngine::run(const CallArgs& c, const OpEnv& env) {
  switch (c.collective) {
    case Collective::kBarrier:
      return collectives_.barrier(env);
    case Collective::kRejected:
      return collectives_.reject(env);
    case Collective::kAllreduce:
      return collectives_.allreduce(c.send, c.recv, c.count, c.type, c.op, choose_(c.count * dataTypeSize(c.type)).id,
                                    env);
    case Collective::kReduce:
      return collectives_.reduce(c.send, c.recv, c.count, c.type, c.op, c.root,
                                 choose_(c.count * dataTypeSize(c.type)).id, env);
    case Collective::kReduceScatter:
      return collectives_.reduceScatter(c.send, c.recv, c.count, c.type, c.op, env);
    case Collective::kBroadcast:
      return collectives_.broadcast(c.recv, c.count, c.type, c.root, env);
    case Collective::kAllgather:
      return collectives_.allgather(c.send, c.recv, c.count, c.type, env);
    case Collective::kAllgatherv:
      return collectives_.allgatherv(c.send, c.count, c.recv, c.recvCounts, c.recvDispls, c.type, env);
    case Collective::kGather:
      return collectives_.gather(c.send, c.recv, c.count, c.type, c.root, env);
    case Collective::kScatter:
      return collectives_.scatter(c.send, c.recv, c.count, c.type, c.root, env);
    case Collective::kAlltoall:
      return collectives_.alltoall(c.send, c.recv, c.count, c.type, env);
    case Collective::kAlltoallv:
      return collectives_.alltoallv(c.send, c.sendCounts, c.sendDispls, c.recv, c.recvCounts, c.recvDispls, c.type,
                                    env);
    case Collective::kPointToPoint:
      return p2p_.run(c.ops, env);
  }
  fail(ErrorCode::kInternal, env.context, "the shared-memory engine has no ", collectiveName(c.collective));
}

}  // namespace braid::host
