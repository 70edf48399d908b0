#include "algorithms/call_args.hpp"

#include <algorithm>

#include "base/data_type.hpp"
#include "base/error.hpp"

namespace braid {

namespace {

// The end of the furthest block, in bytes: what a call with per-rank counts touches of its buffer. Elements between
// and around the blocks are part of it, so a staged copy of the range leaves them as they were.
std::size_t extentBytes(std::span<const std::size_t> counts, std::span<const std::size_t> displs, DataType type) {
  std::size_t end = 0;
  for (std::size_t i = 0; i < counts.size() && i < displs.size(); ++i) {
    if (counts[i] > 0) end = std::max(end, displs[i] + counts[i]);
  }
  return end * dataTypeSize(type);
}

DeviceExtent reads(const void* at, std::size_t bytes) { return {at, bytes, true, false}; }
DeviceExtent writes(const void* at, std::size_t bytes) { return {at, bytes, false, true}; }
DeviceExtent updates(const void* at, std::size_t bytes) { return {at, bytes, true, true}; }

}  // namespace

std::vector<DeviceExtent> deviceExtentsOf(const CallArgs& c, int rank, int size) {
  const std::size_t block = c.count * dataTypeSize(c.type);
  const std::size_t all = block * static_cast<std::size_t>(size);
  const bool root = rank == c.root;
  switch (c.collective) {
    case Collective::kBarrier:
    case Collective::kRejected:
      return {};
    case Collective::kAllreduce:
      return {reads(c.send, block), writes(c.recv, block)};
    case Collective::kReduce:
      return {reads(c.send, block), writes(root ? c.recv : nullptr, block)};
    case Collective::kReduceScatter:
      return {reads(c.send, all), writes(c.recv, block)};
    case Collective::kBroadcast:
      // One buffer: the root's is read, the others' written.
      return {DeviceExtent{c.send, block, root, false}, DeviceExtent{c.recv, block, false, !root}};
    case Collective::kAllgather:
      return {reads(c.send, block), writes(c.recv, all)};
    case Collective::kAllgatherv:
      return {reads(c.send, block), updates(c.recv, extentBytes(c.recvCounts, c.recvDispls, c.type))};
    case Collective::kGather:
      return {reads(c.send, block), writes(root ? c.recv : nullptr, all)};
    case Collective::kScatter:
      return {reads(root ? c.send : nullptr, all), writes(c.recv, block)};
    case Collective::kAlltoall:
      return {reads(c.send, all), writes(c.recv, all)};
    case Collective::kAlltoallv:
      return {reads(c.send, extentBytes(c.sendCounts, c.sendDispls, c.type)),
              updates(c.recv, extentBytes(c.recvCounts, c.recvDispls, c.type))};
    case Collective::kPointToPoint: {
      std::vector<DeviceExtent> extents;
      extents.reserve(c.ops.size());
      for (const P2pOp& op : c.ops) {
        const std::size_t bytes = op.count * dataTypeSize(op.type);
        extents.push_back(op.kind == P2pOp::Kind::kSend ? reads(op.buffer, bytes) : writes(op.buffer, bytes));
      }
      return extents;
    }
  }
  fail(ErrorCode::kInternal, {}, "deviceExtentsOf: unknown collective ", static_cast<int>(c.collective));
}

CallArgs onBuffers(const CallArgs& call, std::span<void* const> at, std::vector<P2pOp>& ops) {
  CallArgs moved = call;
  if (call.collective == Collective::kPointToPoint) {
    ops.assign(call.ops.begin(), call.ops.end());
    for (std::size_t i = 0; i < ops.size() && i < at.size(); ++i) ops[i].buffer = at[i];
    moved.ops = ops;
    return moved;
  }
  if (at.size() >= 2) {
    moved.send = at[0];
    moved.recv = at[1];
  }
  return moved;
}

}  // namespace braid
