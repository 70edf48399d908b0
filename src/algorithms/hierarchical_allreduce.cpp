#include "algorithms/hierarchical_allreduce.hpp"

#include "base/data_type.hpp"
#include "base/error.hpp"

namespace braid {

namespace {

// Runs one step on a level's engine with `stepEnv`, the call's environment as that engine sees it. The steps share
// the call's deadline: the first to sleep sets it (OpEnv::deadline), and the call keeps it for the next, so that one
// call waits at most one timeout in all. A failure is told as the call's: which step among which ranks, then what
// the engine said (which numbers them from 0), and the peer it named as the communicator numbers it.
template <typename Step>
void step(const char* what, const HierarchyLevel& level, const OpEnv& env, const OpEnv& stepEnv, Step&& run) {
  const auto keepDeadline = [&] {
    if (!env.deadline && stepEnv.deadline) env.deadline = stepEnv.deadline;
  };
  try {
    run(stepEnv);
    keepDeadline();
  } catch (const Error& e) {
    keepDeadline();
    ErrorContext ctx = env.context;
    const int peer = e.context().peer;
    if (peer >= 0 && peer < level.size()) ctx.peer = level.ranks[static_cast<std::size_t>(peer)];
    std::string ranks;
    for (int r : level.ranks) ranks += strCat(ranks.empty() ? "" : ", ", r);
    fail(e.code(), ctx, "hierarchical allreduce, ", what, " (ranks ", ranks, ", there numbered from 0): ", e.message());
  }
}

}  // namespace

bool HierarchicalAllreduce::composes(ReduceOp op) {
  return op.kind != ReduceKind::kAvg && op.kind != ReduceKind::kPremulSum;
}

OpEnv HierarchicalAllreduce::stepEnv(const OpEnv& env, const HierarchyLevel& level, std::int64_t& seq) {
  OpEnv mine = env;
  mine.context.rank = level.mine;
  mine.context.seq = seq++;
  return mine;
}

void HierarchicalAllreduce::run(Collectives& inside, Collectives& between, const void* send, void* recv,
                                std::size_t count, DataType type, ReduceOp op, const OpEnv& env) {
  const std::size_t esz = dataTypeSize(type);
  const auto localSize = static_cast<std::size_t>(place_.inside.size());
  const std::size_t shard = count / localSize;
  const std::size_t tail = count - shard * localSize;
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  // Every step is numbered before it runs, whether or not an earlier one failed on this rank: a failure breaks the
  // communicator, so the numbers need to agree only while the steps succeed.
  if (shard > 0) {
    std::byte* mine = out + static_cast<std::size_t>(place_.inside.mine) * shard * esz;
    step("reduce-scatter inside the host", place_.inside, env, stepEnv(env, place_.inside, insideCalls_),
         [&](const OpEnv& e) { inside.reduceScatter(in, mine, shard, type, op, e); });
    step("allreduce between hosts", place_.between, env, stepEnv(env, place_.between, betweenCalls_),
         [&](const OpEnv& e) { between.allreduce(mine, mine, shard, type, op, e); });
    step("allgather inside the host", place_.inside, env, stepEnv(env, place_.inside, insideCalls_),
         [&](const OpEnv& e) { inside.allgather(mine, out, shard, type, e); });
  }
  if (tail > 0) {
    // Fewer elements than local ranks: each local rank reduces them in full (its host's, then the hosts').
    const std::size_t at = shard * localSize * esz;
    step("allreduce of the tail inside the host", place_.inside, env, stepEnv(env, place_.inside, insideCalls_),
         [&](const OpEnv& e) { inside.allreduce(in + at, out + at, tail, type, op, e); });
    step("allreduce of the tail between hosts", place_.between, env, stepEnv(env, place_.between, betweenCalls_),
         [&](const OpEnv& e) { between.allreduce(out + at, out + at, tail, type, op, e); });
  }
}

}  // namespace braid
