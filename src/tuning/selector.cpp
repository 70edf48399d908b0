#include "tuning/selector.hpp"

#include "base/error.hpp"

namespace braid::tuning {

Choice chooseLocalReduce(std::size_t bytes, int ranks, const Settings& settings) {
  if (!settings.algo.empty()) {
    if (settings.algo != "direct" && settings.algo != "rsag") {
      fail(ErrorCode::kInvalidArgument, {}, "BRAID_ALGO='", settings.algo, "' is not an algorithm (direct, rsag)");
    }
    return {settings.algo, "forced by BRAID_ALGO"};
  }
  if (ranks <= 2) {
    // With two ranks both algorithms read each input once more than they write it; direct needs half the rounds.
    return {"direct", "2 ranks: direct moves the same bytes in half the rounds"};
  }
  if (bytes <= settings.directMaxBytes) {
    return {"direct", strCat(bytes, " B <= BRAID_DIRECT_MAX_BYTES (", settings.directMaxBytes, " B): latency-bound")};
  }
  return {"rsag", strCat(bytes, " B > BRAID_DIRECT_MAX_BYTES (", settings.directMaxBytes, " B): each rank reduces 1/",
                         ranks, " of the data")};
}

}  // namespace braid::tuning
