// The host selector: the algorithms of one host describe themselves, and one selector weighs them for the machine
// and the rank count (the cost model), unless BRAID_ALGO forces one or braid tune measured the crossover.
#include "tuning/selector.hpp"

#include <gtest/gtest.h>

#include <map>

#include "algorithms/host/local_collectives.hpp"
#include "base/error.hpp"

namespace braid::tuning {
namespace {

Settings settingsOf(std::map<std::string, std::string> env) {
  return Settings::fromEnvironment([env](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

Machine machine(int ranks, int cores) { return Machine{.ranks = ranks, .usableCpus = cores, .link = Link::kShm}; }

Selector hostSelector(int ranks, int cores, const Settings& settings = settingsOf({})) {
  return Selector(host::localAllreduceAlgorithms(), machine(ranks, cores), settings, Path::kHost);
}

// The largest size (of powers of two up to 64 MiB) the direct algorithm is chosen for, or 0 when it never is.
std::size_t directUpTo(const Selector& s) {
  std::size_t last = 0;
  for (std::size_t b = 8; b <= (std::size_t{64} << 20); b *= 2) {
    if (s.choose(b).algorithm->id == Algorithm::kShmDirect) last = b;
  }
  return last;
}

TEST(Selector, EveryHostAlgorithmDescribesItself) {
  const auto all = host::localAllreduceAlgorithms();
  ASSERT_EQ(all.size(), 2u);
  for (const AlgorithmDescriptor& a : all) {
    EXPECT_EQ(a.link, Link::kShm) << a.name;
    EXPECT_EQ(a.collective, Collective::kAllreduce) << a.name;
    EXPECT_NE(std::string(a.how), "") << a.name;
  }
  EXPECT_EQ(all[0].id, Algorithm::kShmDirect);
  EXPECT_EQ(all[1].id, Algorithm::kShmRsag);
}

TEST(Selector, TheCrossoverFallsAsRanksGrow) {
  // Two ranks: both read every byte once, direct in fewer steps, so it always wins.
  EXPECT_EQ(directUpTo(hostSelector(2, 16)), std::size_t{64} << 20);
  EXPECT_EQ(directUpTo(hostSelector(1, 16)), std::size_t{64} << 20);
  const std::size_t four = directUpTo(hostSelector(4, 16));
  const std::size_t eight = directUpTo(hostSelector(8, 16));
  const std::size_t sixteen = directUpTo(hostSelector(16, 16));
  EXPECT_GT(four, 0u);
  EXPECT_GT(sixteen, 0u);  // a few bytes still go direct
  EXPECT_GE(four, eight);
  EXPECT_GE(eight, sixteen);
  EXPECT_LT(four, std::size_t{64} << 10);  // the fixed 64 KiB crossover was too high for 4 ranks and more
  for (int ranks : {4, 8, 16}) {
    const Selector s = hostSelector(ranks, 16);
    EXPECT_EQ(s.choose(8).algorithm->id, Algorithm::kShmDirect) << ranks;
    EXPECT_EQ(s.choose(std::size_t{1} << 20).algorithm->id, Algorithm::kShmRsag) << ranks;
    EXPECT_EQ(s.choose(8).why, Selection::Why::kModel);
  }
}

TEST(Selector, RanksThatOutnumberTheCoresPreferFewerSteps) {
  EXPECT_GT(directUpTo(hostSelector(8, 2)), directUpTo(hostSelector(8, 16)));
  EXPECT_EQ(directUpTo(hostSelector(8, 0)), directUpTo(hostSelector(8, 16)));  // unknown cores: no penalty
}

TEST(Selector, BraidAlgoForcesAHostAlgorithmAndIgnoresDeviceNames) {
  const Selector rsag = hostSelector(4, 16, settingsOf({{"BRAID_ALGO", "rsag"}}));
  EXPECT_EQ(rsag.choose(8).algorithm->id, Algorithm::kShmRsag);
  EXPECT_EQ(rsag.choose(8).why, Selection::Why::kForced);
  EXPECT_NE(rsag.explain(8).find("forced by BRAID_ALGO"), std::string::npos) << rsag.explain(8);
  const Selector device = hostSelector(4, 16, settingsOf({{"BRAID_ALGO", "twoshot"}}));
  EXPECT_EQ(device.choose(8).why, Selection::Why::kModel);
  try {
    hostSelector(4, 16, settingsOf({{"BRAID_ALGO", "fastest"}}));
    FAIL() << "an unknown algorithm was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("fastest"), std::string::npos) << e.what();
  }
}

TEST(Selector, AMeasuredCrossoverWinsOverTheModel) {
  const Selector s = hostSelector(16, 16, settingsOf({{"BRAID_DIRECT_MAX_BYTES", "256K"}}));
  EXPECT_EQ(s.choose(256 * 1024).algorithm->id, Algorithm::kShmDirect);
  EXPECT_EQ(s.choose(256 * 1024).why, Selection::Why::kMeasured);
  EXPECT_EQ(s.choose(256 * 1024 + 4).algorithm->id, Algorithm::kShmRsag);
  EXPECT_NE(s.explain(4096).find("BRAID_DIRECT_MAX_BYTES=262144 from the environment"), std::string::npos)
      << s.explain(4096);
  // The default value alone is not a measurement.
  EXPECT_EQ(hostSelector(16, 16).choose(32 * 1024).why, Selection::Why::kModel);
}

TEST(Selector, ExplainNamesTheChoiceAndEveryCandidatesCost) {
  const Selector s = hostSelector(8, 16);
  const std::string text = s.explain(1 << 20);
  EXPECT_EQ(text.rfind("rsag: cost model", 0), 0u) << text;
  EXPECT_NE(text.find("direct "), std::string::npos) << text;
  EXPECT_NE(text.find(" us"), std::string::npos) << text;
  EXPECT_NE(text.find("8 ranks (shm)"), std::string::npos) << text;
  const double direct = *s.projectedUs(host::localAllreduceAlgorithms()[0], 1 << 20);
  const double rsag = *s.projectedUs(host::localAllreduceAlgorithms()[1], 1 << 20);
  EXPECT_LT(rsag, direct);
}

}  // namespace
}  // namespace braid::tuning
