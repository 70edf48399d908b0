// `--topology FILE`: every topology command reads a JSON description of a machine that may be hand-written or
// damaged. Properties: bad text is a braid::Error (never a crash or another exception), and whatever is accepted
// survives a round trip (written out, read back, written out again: the same text).
#include <string>

#include "fuzz/fuzz_support.hpp"
#include "topology/topology_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace braid;
  const std::string input(fuzz::text(data, size));
  topology::Topology parsed;
  if (!fuzz::acceptsOrRejects([&] { parsed = tools::topologyFromJson(input, "fuzz.json"); })) return 0;
  const std::string once = tools::topologyToJson(parsed);
  topology::Topology again;
  if (!fuzz::acceptsOrRejects([&] { again = tools::topologyFromJson(once, "round trip"); })) {
    fuzz::broken("braid cannot read back a topology it wrote");
  }
  if (tools::topologyToJson(again) != once) fuzz::broken("a topology changes on a second round trip");
  return 0;
}
