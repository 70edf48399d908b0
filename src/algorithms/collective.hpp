// The calls braid knows, named once for descriptors, logs, errors and the selector.
#pragma once

#include <cstdint>

namespace braid {

enum class Collective : std::uint32_t {
  kBarrier = 1,
  kAllreduce,
  kBroadcast,
  kReduce,
  kAllgather,
  kAllgatherv,
  kReduceScatter,
  kAlltoall,
  kAlltoallv,
  kGather,
  kScatter,
  kRejected,      // a rank whose arguments failed its checks: its peers learn it in the same round
  kPointToPoint,  // a group of sends and receives
};

inline const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kBarrier:
      return "barrier";
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kAllgatherv:
      return "allgatherv";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAlltoall:
      return "alltoall";
    case Collective::kAlltoallv:
      return "alltoallv";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
    case Collective::kRejected:
      return "rejected-call";
    case Collective::kPointToPoint:
      return "p2p";
  }
  return "unknown";
}

}  // namespace braid
