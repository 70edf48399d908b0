#include "tuning/selector.hpp"

#include "base/error.hpp"

namespace braid::tuning {

namespace {

struct Named {
  const char* name;
  Path path;
};
constexpr Named kAlgorithms[] = {{"direct", Path::kHost},    {"rsag", Path::kHost},      {"ll", Path::kDevice},
                                 {"oneshot", Path::kDevice}, {"twoshot", Path::kDevice}, {"staged", Path::kDevice},
                                 {"shared", Path::kDevice}};

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
           "' is not an algorithm (direct, rsag, ll, oneshot, twoshot, staged, shared)");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return found;
}

Choice chooseLocalReduce(std::size_t bytes, int ranks, const Settings& settings) {
  const std::string forced = forcedAlgorithm(settings, Path::kHost);
  if (forced == "direct") return {LocalReduceAlgorithm::kDirect, Reason::kForced};
  if (forced == "rsag") return {LocalReduceAlgorithm::kRsag, Reason::kForced};
  // With two ranks both algorithms read each input once more than they write it; direct needs half the rounds.
  if (ranks <= 2) return {LocalReduceAlgorithm::kDirect, Reason::kTwoRanks};
  if (bytes <= settings.directMaxBytes) return {LocalReduceAlgorithm::kDirect, Reason::kSmall};
  return {LocalReduceAlgorithm::kRsag, Reason::kLarge};
}

const char* algorithmName(LocalReduceAlgorithm algorithm) {
  return algorithm == LocalReduceAlgorithm::kDirect ? "direct" : "rsag";
}

std::string explain(const Choice& choice, std::size_t bytes, int ranks, const Settings& settings) {
  std::string why;
  switch (choice.reason) {
    case Reason::kForced:
      why = "forced by BRAID_ALGO";
      break;
    case Reason::kTwoRanks:
      why = "2 ranks: direct moves the same bytes in half the rounds";
      break;
    case Reason::kSmall:
      why = strCat(bytes, " B <= BRAID_DIRECT_MAX_BYTES (", settings.directMaxBytes, " B): latency-bound");
      break;
    case Reason::kLarge:
      why = strCat(bytes, " B > BRAID_DIRECT_MAX_BYTES (", settings.directMaxBytes, " B): each rank reduces 1/", ranks,
                   " of the data");
      break;
  }
  return strCat(algorithmName(choice.algorithm), ": ", why);
}

}  // namespace braid::tuning
