#include "core/engine_selectors.hpp"

#include "algorithms/host/local_collectives.hpp"
#include "algorithms/host/net/net_engine.hpp"

namespace braid::core {

tuning::Selector sharedMemorySelector(int ranks, int cpus, const Settings& settings) {
  return tuning::Selector(host::localAllreduceAlgorithms(),
                          tuning::Machine{.ranks = ranks, .usableCpus = cpus, .link = tuning::Link::kShm}, settings,
                          tuning::Path::kHost);
}

tuning::Selector tcpSelector(int ranks, const Settings& settings) {
  return tuning::Selector(host::netAllreduceAlgorithms(),
                          tuning::Machine{.ranks = ranks, .usableCpus = 0, .link = tuning::Link::kTcp}, settings,
                          tuning::Path::kHost);
}

tuning::Selector deviceSelector(const device::DeviceFacts& facts, bool nvlink, int ranks, const Settings& settings) {
  return tuning::Selector(
      device::allreduceAlgorithms(facts, settings),
      tuning::Machine{.ranks = ranks, .usableCpus = 0, .link = nvlink ? tuning::Link::kNvlink : tuning::Link::kPcie},
      settings, tuning::Path::kDevice);
}

}  // namespace braid::core
