#include "core/hierarchy.hpp"

#include "base/data_type.hpp"
#include "base/error.hpp"
#include "core/communicator_access.hpp"
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

bool Hierarchy::composes(ReduceOp op) { return op.kind != ReduceKind::kAvg && op.kind != ReduceKind::kPremulSum; }

std::unique_ptr<Hierarchy> Hierarchy::make(CommunicatorImpl& parent) {
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
  // Every rank makes the local group first, then the cross one: the same order on every member of each.
  auto l = makeSubgroup(parent, local);
  auto c = makeSubgroup(parent, cross);
  return std::unique_ptr<Hierarchy>(new Hierarchy(std::move(l), std::move(c)));
}

namespace {

// A step's failure, told as the parent's: which step, then what the sub-communicator said.
template <typename Step>
void step(const char* what, const OpEnv& env, Step&& run) {
  try {
    run();
  } catch (const Error& e) {
    fail(e.code(), env.context, "hierarchical allreduce, ", what, ": ", e.message());
  }
}

}  // namespace

void Hierarchy::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                          const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const auto localSize = static_cast<std::size_t>(local_->size());
  const std::size_t shard = count / localSize;
  const std::size_t tail = count - shard * localSize;
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  // Each step on the caller's stream: GPU buffers go from one step to the next in stream order, without the host
  // waiting between them where the step's transport allows (the kernels inside a host).
  const CallOptions opts{.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(env.timeoutSeconds * 1000)),
                         .stream = env.stream};
  if (shard > 0) {
    std::byte* mine = out + static_cast<std::size_t>(local_->rank()) * shard * esz;
    step("reduce-scatter inside the host", env, [&] { local_->reduceScatter(in, mine, shard, type, op, opts); });
    step("allreduce between hosts", env, [&] { cross_->allreduce(mine, mine, shard, type, op, opts); });
    step("allgather inside the host", env, [&] { local_->allgather(mine, out, shard, type, opts); });
  }
  if (tail > 0) {
    // Fewer elements than local ranks: each local rank reduces them in full (its host's, then the hosts').
    const std::size_t at = shard * localSize * esz;
    step("allreduce of the tail inside the host", env,
         [&] { local_->allreduce(in + at, out + at, tail, type, op, opts); });
    step("allreduce of the tail between hosts", env,
         [&] { cross_->allreduce(out + at, out + at, tail, type, op, opts); });
  }
}

void Hierarchy::abort() {
  local_->abort();
  cross_->abort();
}

std::string Hierarchy::describe(std::size_t bytes) const {
  const std::size_t shard = bytes / static_cast<std::size_t>(local_->size());
  return strCat("hierarchical (reduce-scatter and allgather over ",
                CommunicatorAccess::impl(*local_).engine().transportName(), " inside hosts, ",
                CommunicatorAccess::impl(*cross_).allreduceAlgorithm(shard), " between)");
}

}  // namespace braid::core
