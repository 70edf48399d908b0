// What ranks that share a GPU trade when they meet on the host: the call each one is in. Those paths check it at
// every meeting, so that ranks in different calls (another op, count, type, root, reduce op, or piece of the call)
// fail with a Mismatch naming both calls, never with wrong data.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/call_args.hpp"
#include "algorithms/op_env.hpp"
#include "braid/types.hpp"

namespace braid::device {

/// 64 bytes, no padding: compared with memcmp.
struct CallShape {
  char op[24];
  std::uint32_t type;
  std::int32_t root;  ///< -1 for rootless collectives
  std::uint64_t count;
  std::uint64_t offset;  ///< the element a piece starts at
  std::uint32_t kind;    ///< the reduce op; kNumReduceKinds for collectives that do not reduce
  std::uint32_t pad;
  std::uint64_t piece;  ///< pieces met so far: ranks out of step by a piece differ here
};
static_assert(sizeof(CallShape) == 64);

/// The call `env` names (op), with offset and piece 0.
CallShape callShape(const OpEnv& env, DataType type, std::size_t count, int root, std::uint32_t kind);
/// The same for `call`: its root where it has one, its reduction where it reduces.
CallShape callShape(const OpEnv& env, const CallArgs& call);

/// Throws Mismatch (peer: the first rank whose call differs from rank 0's) naming both calls, when any of the
/// `size` shapes (one per rank, strided by `stride` bytes) differs from rank 0's.
void requireSameCall(const void* shapes, std::size_t stride, int size, const OpEnv& env);

}  // namespace braid::device
