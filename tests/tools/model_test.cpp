// `braid model`: the projection table for a cluster, and measured JSON rows set against the model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "base/error.hpp"
#include "model/model_report.hpp"

namespace braid::tools {
namespace {

TEST(Model, TheTableNamesItselfAProjectionAndPicksBySize) {
  tuning::Cluster c;
  c.nodes = 2;
  c.ranksPerNode = 8;
  c.intra = tuning::defaultLinkCost(tuning::Link::kNvlink);
  c.inter = {10, 12.5, "given"};
  c.nics = 8;
  const std::string text = modelReport(tuning::Collective::kAllreduce, c, 1024, std::size_t{1} << 30, 1024);
  EXPECT_NE(text.find("a projection from link costs, not a measurement"), std::string::npos) << text;
  EXPECT_NE(text.find("between hosts: 8 NIC(s) per host"), std::string::npos) << text;
  EXPECT_NE(text.find("       1 KiB  direct"), std::string::npos) << text;
  EXPECT_NE(text.find("       1 GiB  hierarchical"), std::string::npos) << text;
}

TEST(Model, MeasuredRowsAgainstTheModel) {
  // Two rows where the measurement is exactly the model's answer and twice it: errors 0% and -50%.
  const tuning::LinkCost link{1, 1, "test"};  // 1 us a step, 1 GB/s
  tuning::Cluster c;
  c.intra = link;
  const double at1k = tuning::projectAll(tuning::Collective::kAllreduce, 1000, c).front().us;
  const double at1m = tuning::projectAll(tuning::Collective::kAllreduce, 1000000, c).front().us;
  char path[] = "/tmp/braid-model-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream f(path);
    f << R"({"results": [
      {"impl": "braid", "collective": "allreduce", "dtype": "float32", "bytes": 1000, "ranks": 2, "time_us": )"
      << at1k << R"(, "wrong": 0},
      {"impl": "braid", "collective": "allreduce", "dtype": "float32", "bytes": 1000000, "ranks": 2, "time_us": )"
      << 2 * at1m << R"(, "wrong": 0},
      {"impl": "braid", "collective": "allreduce", "dtype": "float32", "bytes": 64, "ranks": 2, "time_us": 1, "wrong": 3},
      {"impl": "nccl", "collective": "allreduce", "dtype": "float32", "bytes": 64, "ranks": 2, "time_us": 1, "wrong": 0}
    ]})";
  }
  const auto rows = measuredRows(path, tuning::Collective::kAllreduce);
  ::unlink(path);
  ASSERT_EQ(rows.size(), 2u);  // the wrong row and NCCL's are left out
  const std::string text = compareReport(tuning::Collective::kAllreduce, link, rows);
  EXPECT_NE(text.find("+0%"), std::string::npos) << text;
  EXPECT_NE(text.find("-50%"), std::string::npos) << text;
  EXPECT_NE(text.find("2 points: median |error| 50%, largest 50%"), std::string::npos) << text;
  EXPECT_THROW(measuredRows("/nonexistent/x.json", tuning::Collective::kAllreduce), Error);
}

}  // namespace
}  // namespace braid::tools
