#include "core/engine_selectors.hpp"

#include "algorithms/host/local_collectives.hpp"
#include "algorithms/host/net/net_engine.hpp"

namespace braid::core {

tuning::Selector sharedMemorySelector(int ranks, HostLayout host, const Settings& settings) {
  return tuning::Selector(
      host::localAllreduceAlgorithms(),
      tuning::Machine{.ranks = ranks, .usableCpus = host.cpus, .link = tuning::Link::kShm, .numaNodes = host.numaNodes},
      settings, tuning::Path::kHost);
}

tuning::Selector tcpSelector(int ranks, int nicMbps, const Settings& settings) {
  return tuning::Selector(
      host::netAllreduceAlgorithms(),
      tuning::Machine{.ranks = ranks, .usableCpus = 0, .link = tuning::Link::kTcp, .nicMbps = nicMbps}, settings,
      tuning::Path::kHost);
}

tuning::Selector deviceSelector(const device::DeviceFacts& facts, const device::GpuLinks& links, int ranks,
                                const Settings& settings) {
  return tuning::Selector(device::allreduceAlgorithms(facts, settings),
                          tuning::Machine{.ranks = ranks,
                                          .usableCpus = 0,
                                          .link = links.nvlink ? tuning::Link::kNvlink : tuning::Link::kPcie,
                                          .gpus = links.gpus,
                                          .linkGeneration = links.generation},
                          settings, tuning::Path::kDevice);
}

}  // namespace braid::core
