#include "tuning/selector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "base/error.hpp"

namespace braid::tuning {

namespace {

struct Named {
  const char* name;
  Path path;
};
// Every name BRAID_ALGO accepts, and the calls it applies to ("direct" names the shared-memory and the TCP one).
constexpr Named kAlgorithms[] = {{"direct", Path::kHost},    {"rsag", Path::kHost},     {"doubling", Path::kHost},
                                 {"ring", Path::kHost},      {"ll", Path::kDevice},     {"oneshot", Path::kDevice},
                                 {"twoshot", Path::kDevice}, {"staged", Path::kDevice}, {"shared", Path::kDevice}};

const char* whyName(Selection::Why why) {
  switch (why) {
    case Selection::Why::kForced:
      return "forced by BRAID_ALGO";
    case Selection::Why::kMeasured:
      return "measured crossover";
    case Selection::Why::kModel:
      return "cost model";
    case Selection::Why::kPath:
      return "the path this machine leaves";
  }
  return "?";
}

std::string twoDecimals(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", v);
  return text;
}

}  // namespace

std::string forcedAlgorithm(const Settings& settings, Path path) {
  std::string found;
  std::size_t start = 0;
  while (start <= settings.algo.size() && !settings.algo.empty()) {
    const std::size_t comma = settings.algo.find(',', start);
    const std::string name =
        settings.algo.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool known = false;
    for (const Named& a : kAlgorithms) {
      if (name != a.name) continue;
      known = true;
      if (a.path == path) found = name;
    }
    if (!known) {
      fail(ErrorCode::kInvalidArgument, {}, "BRAID_ALGO='", settings.algo, "': '", name,
           "' is not an algorithm (direct, rsag, doubling, ring, ll, oneshot, twoshot, staged, shared)");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return found;
}

std::optional<std::size_t> measuredCrossoverFor(const std::string& table, int ranks) {
  std::size_t start = 0;
  while (start < table.size()) {
    const std::size_t comma = std::min(table.find(',', start), table.size());
    const std::string entry = table.substr(start, comma - start);
    const std::size_t colon = entry.find(':');
    char* end = nullptr;
    const long count = colon == std::string::npos ? 0 : std::strtol(entry.c_str(), &end, 10);
    const std::optional<std::size_t> bytes =
        colon == std::string::npos ? std::nullopt : parseBytes(entry.substr(colon + 1));
    if (colon == std::string::npos || end != entry.c_str() + colon || count < 1 || !bytes) {
      fail(ErrorCode::kInvalidArgument, {}, "BRAID_DIRECT_MAX_BYTES_BY_RANKS='", table, "': '", entry,
           "' is not RANKS:BYTES (e.g. 8:16K)");
    }
    if (count == ranks) return bytes;
    start = comma + 1;
  }
  return std::nullopt;
}

Machine machineOf(const topology::Topology& host, int ranks, Link link) {
  Machine m;
  m.ranks = ranks;
  m.usableCpus = host.runnableCpus();
  m.link = link;
  return m;
}

LinkCost linkCostOf(const Machine& machine) {
  const bool gpu = machine.link == Link::kNvlink || machine.link == Link::kPcie;
  LinkCost cost = gpu ? gpuLinkCost(machine.link, machine.linkGeneration) : defaultLinkCost(machine.link);
  if (gpu && machine.gpus > 0) cost.source += strCat("; ", machine.gpus, " GPU(s)");
  if (machine.link == Link::kTcp && machine.nicMbps > 0 && machine.nicMbps / 8000.0 < cost.bandwidthGBs) {
    // A rank cannot send faster than its NICs (Mbit/s: 8000 make a GB/s).
    cost.bandwidthGBs = machine.nicMbps / 8000.0;
    cost.source += strCat("; at most the slowest rank's NICs, ", machine.nicMbps, " Mbit/s");
  }
  if (machine.link == Link::kShm && machine.numaNodes > 1) {
    cost.source += strCat("; the ranks span ", machine.numaNodes, " NUMA nodes, the cost was measured on one");
  }
  return cost;
}

Selector::Selector(std::vector<AlgorithmDescriptor> candidates, Machine machine, const Settings& settings, Path path)
    : candidates_(std::move(candidates)), machine_(std::move(machine)) {
  if (candidates_.empty()) fail(ErrorCode::kInternal, {}, "a selector needs at least one algorithm to choose from");
  cluster_.nodes = 1;
  cluster_.ranksPerNode = machine_.ranks;
  cluster_.intra = linkCostOf(machine_);
  // Ranks that outnumber the cores take turns on them: a step waits for the peers sharing a core to be run, so
  // every step and wait costs about as many times more (an assumption: not yet measured).
  if (machine_.usableCpus > 0 && machine_.ranks > machine_.usableCpus) {
    const double turns = std::ceil(static_cast<double>(machine_.ranks) / machine_.usableCpus);
    cluster_.intra.latencyUs *= turns;
    cluster_.intra.perPeerUs *= turns;
  }
  const std::string forced = forcedAlgorithm(settings, path);
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    if (!forced.empty() && forced == candidates_[i].name) forced_ = static_cast<int>(i);
  }
  // BRAID_DIRECT_MAX_BYTES splits host algorithms only; the GPU kernels' measured bounds narrow their descriptors.
  // What the environment says wins over the tune file; of what one source says, the crossover measured for this
  // rank count over shared memory wins over the one for all counts.
  const bool host = path == Path::kHost;
  const auto fromTuneFile = [&](const char* knob) {
    return settings.tuned.find(strCat(knob, "=")) != std::string::npos;
  };
  const auto where = [&](const char* knob) { return fromTuneFile(knob) ? "the tune file" : "the environment"; };
  const bool directGiven = settings.given("BRAID_DIRECT_MAX_BYTES");
  const std::optional<std::size_t> perRanks =
      host && machine_.link == Link::kShm && settings.given("BRAID_DIRECT_MAX_BYTES_BY_RANKS")
          ? measuredCrossoverFor(settings.directMaxBytesByRanks, machine_.ranks)
          : std::nullopt;
  const bool directFromEnvironment = directGiven && !fromTuneFile("BRAID_DIRECT_MAX_BYTES");
  if (perRanks && !(directFromEnvironment && fromTuneFile("BRAID_DIRECT_MAX_BYTES_BY_RANKS"))) {
    measuredMax_ = *perRanks;
    measuredFrom_ = strCat("BRAID_DIRECT_MAX_BYTES_BY_RANKS for ", machine_.ranks, " ranks, from ",
                           where("BRAID_DIRECT_MAX_BYTES_BY_RANKS"));
  } else if (host && directGiven) {
    measuredMax_ = settings.directMaxBytes;
    measuredFrom_ = strCat("BRAID_DIRECT_MAX_BYTES from ", where("BRAID_DIRECT_MAX_BYTES"));
  } else if (host && !cluster_.intra.modelPricesPipelining) {
    measuredMax_ = settings.directMaxBytes;
    measuredFrom_ = strCat("BRAID_DIRECT_MAX_BYTES's default, measured over ", linkName(machine_.link));
  }
  ranges_ = findCrossovers(Side::kAll);
  if (measuredMax_) {
    unpipelined_ = findCrossovers(Side::kUnpipelined);
    pipelined_ = findCrossovers(Side::kPipelined);
  }
}

bool Selector::applies(const AlgorithmDescriptor& a, std::size_t bytes) const {
  return bytes >= a.minBytes && bytes <= a.maxBytes && machine_.ranks >= a.minRanks;
}

std::optional<double> Selector::projectedUs(const AlgorithmDescriptor& a, std::size_t bytes) const {
  return projectUs(a.collective, a.schedule, bytes, cluster_);
}

std::size_t Selector::cheapest(std::size_t bytes, Side side) const {
  std::size_t best = candidates_.size();
  std::size_t unmodelled = candidates_.size();  // the first that applies, where no modelled one does
  double bestUs = 0;
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    const AlgorithmDescriptor& a = candidates_[i];
    if (side != Side::kAll && a.pipelined != (side == Side::kPipelined)) continue;
    if (!applies(a, bytes)) continue;
    if (!a.modelled) {
      if (unmodelled == candidates_.size()) unmodelled = i;
      continue;
    }
    const std::optional<double> us = projectedUs(a, bytes);
    if (!us) continue;
    // Ties go to the earlier candidate: fewer steps for the same projected time.
    if (best == candidates_.size() || *us < bestUs) {
      best = i;
      bestUs = *us;
    }
  }
  return best != candidates_.size() ? best : unmodelled;
}

// The model's choice only changes where a cost line crosses another or a candidate's byte range begins or ends.
// Those sizes are found by evaluating every power of two and every range bound, then bisecting each interval whose
// ends disagree down to the byte; an interval holding two crossings (a candidate cheapest only inside one octave)
// resolves one of them, which the projections of the shapes priced here (lines in the size) do not produce.
std::vector<Selector::Range> Selector::findCrossovers(Side side) const {
  constexpr std::size_t kLast = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> points{0, kLast};
  for (std::size_t b = 1; b != 0 && b < kLast; b <<= 1) points.push_back(b);
  for (const AlgorithmDescriptor& a : candidates_) {
    points.push_back(a.minBytes);
    if (a.minBytes > 0) points.push_back(a.minBytes - 1);
    points.push_back(a.maxBytes);
    if (a.maxBytes < kLast) points.push_back(a.maxBytes + 1);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  std::vector<Range> ranges;
  std::size_t from = 0;  // the largest size known to run `current`
  std::size_t current = cheapest(0, side);
  for (const std::size_t point : points) {
    const std::size_t atPoint = cheapest(point, side);
    while (atPoint != current) {
      std::size_t same = from, other = point;  // cheapest(same) == current, cheapest(other) != current
      while (other - same > 1) {
        const std::size_t mid = same + (other - same) / 2;
        (cheapest(mid, side) == current ? same : other) = mid;
      }
      ranges.push_back({same, current});
      from = other;
      current = cheapest(other, side);
    }
    from = point;
  }
  ranges.push_back({kLast, current});
  return ranges;
}

std::size_t Selector::lookUp(const std::vector<Range>& ranges, std::size_t bytes) {
  return std::lower_bound(ranges.begin(), ranges.end(), bytes, [](const Range& r, std::size_t b) { return r.upTo < b; })
      ->candidate;
}

Selection Selector::choose(std::size_t bytes) const {
  if (forced_ >= 0 && applies(candidates_[forced_], bytes)) return {&candidates_[forced_], Selection::Why::kForced};
  if (measuredMax_) {
    const std::size_t i = lookUp(bytes <= *measuredMax_ ? unpipelined_ : pipelined_, bytes);
    if (i < candidates_.size()) return {&candidates_[i], Selection::Why::kMeasured};
  }
  const std::size_t i = lookUp(ranges_, bytes);
  const AlgorithmDescriptor& a = candidates_[i < candidates_.size() ? i : 0];
  return {&a, a.modelled ? Selection::Why::kModel : Selection::Why::kPath};
}

std::string Selector::explain(std::size_t bytes) const {
  const Selection s = choose(bytes);
  std::string out = strCat(s.algorithm->name, ": ", whyName(s.why));
  if (s.why == Selection::Why::kMeasured) {
    out += strCat(" (", *measuredMax_, " B: ", measuredFrom_, ")");
  }
  out += strCat("; ", s.algorithm->how, ". Considered, for ", bytes, " B over ", machine_.ranks, " ranks (",
                linkName(machine_.link), "):");
  for (const AlgorithmDescriptor& a : candidates_) {
    if (!applies(a, bytes)) {
      out += strCat(" ", a.name, " (does not apply)");
    } else if (!a.modelled) {
      out += strCat(" ", a.name, " (not modelled)");
    } else if (const std::optional<double> us = projectedUs(a, bytes)) {
      out += strCat(" ", a.name, " ", twoDecimals(*us), " us");
    } else {
      out += strCat(" ", a.name, " (does not apply)");
    }
  }
  return out + strCat(" [model: ", cluster_.intra.source, "]");
}

}  // namespace braid::tuning
