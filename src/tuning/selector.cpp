#include "tuning/selector.hpp"

#include "base/error.hpp"

namespace braid::tuning {

Choice chooseLocalReduce(std::size_t bytes, int ranks, const Settings& settings) {
  if (!settings.algo.empty()) {
    if (settings.algo == "direct") return {LocalReduceAlgorithm::kDirect, Reason::kForced};
    if (settings.algo == "rsag") return {LocalReduceAlgorithm::kRsag, Reason::kForced};
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_ALGO='", settings.algo, "' is not an algorithm (direct, rsag)");
  }
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
