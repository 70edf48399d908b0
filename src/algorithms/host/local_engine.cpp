#include "algorithms/host/local_engine.hpp"

namespace braid::host {

LocalEngine::LocalEngine(std::unique_ptr<transport::LocalGroup> group, const transport::FabricLayout& layout,
                         std::function<const tuning::AlgorithmDescriptor&(std::size_t)> chooseReduce,
                         std::function<std::string(std::size_t)> explainReduce, double heartbeatInterval,
                         double heartbeatTimeout)
    : fabric_(std::move(group), layout),
      collectives_(fabric_),
      p2p_(fabric_),
      choose_(std::move(chooseReduce)),
      explain_(std::move(explainReduce)),
      heartbeat_(heartbeatInterval, [this] { fabric_.beat(); }) {
  fabric_.setHeartbeatTimeout(heartbeatInterval > 0 ? heartbeatTimeout : 0);
}

}  // namespace braid::host
