// Uses braid through its installed headers only: one rank, one allreduce, the C ABI's names, and the public
// introspection headers (the machine, how a call would run, the knobs, the cost model, element values).
#include <braid/braid.h>

#include <braid/braid.hpp>
#include <braid/cost_model.hpp>
#include <braid/elements.hpp>
#include <braid/introspect.hpp>
#include <braid/knobs.hpp>
#include <braid/topology.hpp>
#include <cstdio>
#include <string>

int main() {
  const braid::UniqueId id = braid::Communicator::uniqueId();
  auto comm = braid::Communicator::create(id, 0, 1);
  int v[3] = {1, 2, 3};
  comm->allreduce(v, v, 3, braid::DataType::kInt32, braid::ReduceKind::kSum);
  std::printf("consumer ok: %d %d %d, %s\n", v[0], v[1], v[2], braid_result_string(BRAID_SUCCESS));

  const braid::topology::Topology host = braid::topology::detect();
  const std::string how = braid::explainCall(host, {.collective = "allreduce", .bytes = 1 << 20, .ranks = 2});
  const auto link = braid::tuning::defaultLinkCost(braid::tuning::Link::kShm);
  const auto bf16 = braid::parseDataType("bf16");
  unsigned short element = 0;
  if (bf16) braid::storeElement(&element, 0, *bf16, 1.5);
  std::printf("%d CPUs; %zu knobs; shm %.1f GB/s; %s", host.logicalCpus, braid::allKnobs().size(), link.bandwidthGBs,
              how.c_str());
  const bool introspects = how.find("algorithm:") != std::string::npos && !braid::allKnobs().empty() && bf16 &&
                           braid::loadElement(&element, 0, *bf16) == 1.5;
  return v[0] == 1 && v[2] == 3 && introspects ? 0 : 1;
}
