#include "tuning/net_selector.hpp"

#include "base/error.hpp"

namespace braid::tuning {

namespace {

// From 4 ranks on, small allreduces exchange whole buffers by recursive doubling (log2 n messages each, in
// sequence) rather than directly with every peer (n-1 messages at once): per-message costs dominate small
// messages over TCP. Measured on the H200 host over loopback (docs/BENCHMARKS.md): 4 ranks, 8 B 34.8 -> 29.0 us,
// 32 KiB 82.9 -> 53.6 us; 8 ranks, 8 B 86.6 -> 42.1 us, 32 KiB 258 -> 88 us. With 2 ranks both are one exchange;
// with 3, doubling's fold adds two message latencies to direct's one.
constexpr int kDoublingMinRanks = 4;

}  // namespace

NetChoice chooseNetAllreduce(std::size_t bytes, int ranks, const Settings& settings) {
  if (ranks <= 1) return {NetAlgorithm::kDirect, NetReason::kOneRank};
  if (bytes > settings.directMaxBytes) return {NetAlgorithm::kRing, NetReason::kLarge};
  if (ranks >= kDoublingMinRanks) return {NetAlgorithm::kDoubling, NetReason::kSmallManyRanks};
  return {NetAlgorithm::kDirect, NetReason::kSmall};
}

const char* netAlgorithmName(NetAlgorithm algorithm) {
  switch (algorithm) {
    case NetAlgorithm::kDirect:
      return "direct";
    case NetAlgorithm::kDoubling:
      return "doubling";
    case NetAlgorithm::kRing:
      return "ring";
  }
  return "?";
}

std::string explainNetAllreduce(const NetChoice& choice, std::size_t bytes, int ranks, const Settings& settings) {
  switch (choice.reason) {
    case NetReason::kOneRank:
      return "direct: a single rank copies";
    case NetReason::kSmallManyRanks:
      return strCat("doubling: ", bytes, " B <= BRAID_DIRECT_MAX_BYTES (", settings.directMaxBytes, ") over ", ranks,
                    " ranks: log2 n exchanges of the whole buffer cost less than n-1 messages per rank");
    case NetReason::kSmall:
      return strCat("direct: ", bytes, " B <= BRAID_DIRECT_MAX_BYTES (", settings.directMaxBytes,
                    "): one message latency, every rank reduces all ", ranks, " inputs in rank order");
    case NetReason::kLarge:
      break;
  }
  return strCat("ring: ", bytes, " B > BRAID_DIRECT_MAX_BYTES (", settings.directMaxBytes,
                "): reduce-scatter + allgather over ", ranks, " ranks, ", settings.tcpStreams,
                " TCP stream(s) per peer, each rank sends 2(n-1)/n of the buffer (bandwidth-optimal)");
}

bool useHierarchy(std::size_t bytes, const Settings& settings) {
  if (settings.hierarchy == "on") return true;
  if (settings.hierarchy == "off") return false;
  if (!settings.hierarchy.empty() && settings.hierarchy != "auto") {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_HIERARCHY=", settings.hierarchy, " is not one of auto, on, off");
  }
  // Measured on the namespace bed (2 hosts x 2 ranks at 10 Gbit/s, docs/BENCHMARKS.md): flat 1.8x faster at 1 MiB,
  // hierarchical 1.6x at 4 MiB and 1.75x at 16 MiB. The cost model put the crossover near 8 KiB: it has no CPU
  // contention, and there 4 ranks shared 2 cores. Hosts with a core per rank should cross lower.
  return bytes >= kHierarchyMinBytes;
}

}  // namespace braid::tuning
