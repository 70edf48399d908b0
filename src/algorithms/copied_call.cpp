#include "algorithms/copied_call.hpp"

#include <vector>

namespace braid {

void runOnCopies(Collectives& host, const CallArgs& call, int size, BufferCopies& copies, const OpEnv& env) {
  const std::vector<DeviceExtent> extents = deviceExtentsOf(call, env.context.rank, size);
  const StagingLayout layout = layOutStaging(extents);
  std::byte* arena = copies.arena(layout.arenaBytes);
  for (const ExtentCopy& c : layout.copiesIn) {
    copies.fetch(arena + c.offset, reinterpret_cast<const void*>(c.device), c.bytes);
  }
  copies.awaitFetched(env);
  std::vector<void*> at(extents.size(), nullptr);
  for (std::size_t i = 0; i < extents.size(); ++i) {
    if (layout.offsets[i] != StagingLayout::kNone) at[i] = arena + layout.offsets[i];
  }
  std::vector<P2pOp> ops;
  OpEnv unfed = env;
  unfed.feed = nullptr;
  host.run(onBuffers(call, at, ops), unfed);
  if (layout.copiesOut.empty()) return;
  for (const ExtentCopy& c : layout.copiesOut) {
    copies.deliver(reinterpret_cast<void*>(c.device), arena + c.offset, c.bytes);
  }
  copies.awaitDelivered(env);
}

}  // namespace braid
