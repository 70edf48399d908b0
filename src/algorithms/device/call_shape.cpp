#include "algorithms/device/call_shape.hpp"

#include <cstdio>
#include <cstring>
#include <string>

#include "base/data_type.hpp"
#include "base/error.hpp"

namespace braid::device {

CallShape callShape(const OpEnv& env, DataType type, std::size_t count, int root, std::uint32_t kind) {
  CallShape shape{};
  std::snprintf(shape.op, sizeof shape.op, "%s", env.context.op);
  shape.type = static_cast<std::uint32_t>(type);
  shape.root = root;
  shape.count = count;
  shape.kind = kind;
  return shape;
}

CallShape callShape(const OpEnv& env, const CallArgs& c) {
  const Collective k = c.collective;
  const bool rooted =
      k == Collective::kReduce || k == Collective::kBroadcast || k == Collective::kGather || k == Collective::kScatter;
  const bool reduces = k == Collective::kAllreduce || k == Collective::kReduce || k == Collective::kReduceScatter;
  return callShape(env, c.type, c.count, rooted ? c.root : -1,
                   reduces ? static_cast<std::uint32_t>(c.op.kind) : static_cast<std::uint32_t>(kNumReduceKinds));
}

void requireSameCall(const void* shapes, std::size_t stride, int size, const OpEnv& env) {
  auto at = [&](int r) {
    CallShape s{};
    std::memcpy(&s, static_cast<const std::byte*>(shapes) + static_cast<std::size_t>(r) * stride, sizeof s);
    return s;
  };
  const CallShape first = at(0);
  for (int r = 1; r < size; ++r) {
    const CallShape s = at(r);
    if (std::memcmp(&s, &first, sizeof s) == 0) continue;
    auto text = [](const CallShape& x) {
      return strCat(x.op, " of ", x.count, " ", dataTypeName(static_cast<DataType>(x.type)),
                    x.kind < static_cast<std::uint32_t>(kNumReduceKinds)
                        ? strCat(" ", reduceKindName(static_cast<ReduceKind>(x.kind)))
                        : std::string(),
                    x.root >= 0 ? strCat(" (root ", x.root, ")") : std::string(), ", piece ", x.piece, " at element ",
                    x.offset);
    };
    ErrorContext context = env.context;
    context.peer = r;
    fail(ErrorCode::kMismatch, context, "ranks that share a GPU are in different calls: rank 0 in ", text(first),
         ", rank ", r, " in ", text(s));
  }
}

}  // namespace braid::device
