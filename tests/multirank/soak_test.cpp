// Soak (issue 10): randomized collectives (collective, type, op, size, root, in place or not, blocking or async),
// every result checked exactly (tests/support/collective_cases), while resident memory must stay flat. CI runs 2,000
// calls over shared memory and TCP; scripts/soak.sh runs BRAID_SOAK_CALLS (100,000) of them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "support/collective_cases.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

long residentKb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

int soakCalls(int fallback) {
  const char* v = std::getenv("BRAID_SOAK_CALLS");
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

// Every rank draws the same sequence (one seed), so every rank makes the same calls.
void soak(Communicator& comm, int calls, unsigned seed) {
  std::mt19937 rng(seed);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const std::vector<Coll>& colls = allColls();
  const DataType types[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kInt32, DataType::kInt64,
                            DataType::kBFloat16, DataType::kFloat16, DataType::kUint8, DataType::kBool};
  const std::size_t counts[] = {1, 3, 64, 1000, 4099, 65537, 300007};
  long baseline = 0;
  for (int i = 0; i < calls; ++i) {
    Case c;
    c.coll = colls[pick(colls.size())];
    c.type = types[pick(std::size(types))];
    const auto ops = opsFor(c.type);
    c.op = ops[pick(ops.size())];
    // Large messages one call in eight: most calls are the small ones a training step makes many of.
    c.count = counts[pick(8) == 0 ? std::size(counts) - 1 - pick(2) : pick(std::size(counts) - 2)];
    c.inPlace = supportsInPlace(c.coll) && pick(2) == 0;
    c.root = static_cast<int>(pick(static_cast<std::size_t>(comm.size())));
    c.async = pick(4) == 0;
    try {
      runCase(comm, c);
    } catch (const std::exception& e) {
      throw std::runtime_error("call " + std::to_string(i) + " (seed " + std::to_string(seed) + "), " + describe(c) +
                               ": " + e.what());
    }
    if (i == std::min(calls / 10, 200)) baseline = residentKb();  // after every buffer size has been seen
  }
  const long growth = residentKb() - baseline;
  require(growth < 32 * 1024,
          "resident memory grew by " + std::to_string(growth) + " KiB over " + std::to_string(calls) + " calls");
}

TEST(Soak, RandomCollectivesStayExactAndMemoryFlatOverSharedMemory) {
  const int calls = soakCalls(1000);
  EXPECT_EQ(failures(runProcesses(
                3, [&](Communicator& comm) { soak(comm, calls, 20261130); }, 1800, "shm")),
            "");
}

TEST(Soak, RandomCollectivesStayExactAndMemoryFlatOverTcp) {
  const int calls = soakCalls(1000);
  EXPECT_EQ(failures(runProcesses(
                2, [&](Communicator& comm) { soak(comm, calls, 1130); }, 1800, "tcp")),
            "");
}

}  // namespace
}  // namespace braid::testing
