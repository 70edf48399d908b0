// meta.cpus: a rank's mask as the kernel's cpulist, and the masks of a job's ranks gathered end to end.
#include "bench/rank_cpus.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <string>
#include <vector>

namespace braid::tools {
namespace {

std::vector<std::uint64_t> maskOf(const std::vector<int>& cpus) {
  std::vector<std::uint64_t> mask(kCpuMaskWords, 0);
  for (int c : cpus) mask[static_cast<std::size_t>(c) / 64] |= std::uint64_t{1} << (c % 64);
  return mask;
}

TEST(RankCpus, AMaskReadsAsTheKernelsCpulist) {
  EXPECT_EQ(cpuListOf(maskOf({}).data()), "");
  EXPECT_EQ(cpuListOf(maskOf({5}).data()), "5");
  EXPECT_EQ(cpuListOf(maskOf({0, 1, 2, 3, 8, 10, 11}).data()), "0-3,8,10-11");
  EXPECT_EQ(cpuListOf(maskOf({63, 64, 65, 1023}).data()), "63-65,1023");
}

TEST(RankCpus, GatheredMasksReadRankByRank) {
  std::vector<std::uint64_t> gathered = maskOf({0});
  const auto second = maskOf({1, 2});
  gathered.insert(gathered.end(), second.begin(), second.end());
  EXPECT_EQ(cpuListsOf(gathered, 2), nlohmann::json({"0", "1-2"}));
  EXPECT_EQ(cpuListsOf(gathered, 3), nlohmann::json({"0", "1-2"}));  // a short gather holds only what it holds
}

TEST(RankCpus, ThisThreadsMaskIsItsAffinity) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  EXPECT_EQ(cpuMaskOfThisThread(), maskOf(cpus));
}

}  // namespace
}  // namespace braid::tools
