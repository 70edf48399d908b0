// Soak: randomized collectives (collective, type, op, size, root, in place or not, blocking or async),
// every result checked: exactly for exact-sum inputs (tests/support/collective_cases), against a float64 reference
// within the type's error bound for random floating-point inputs (one call in four; tests/support/random_reductions),
// while resident memory must stay flat. Two tests keep one world each (3 processes over shared memory, 2 over TCP);
// a third draws the world too: 2 to 5 ranks, as processes over shared memory or TCP, or as threads over the
// in-memory transport. CI runs 1,000 calls in each of the first two and 400 in the third; scripts/soak.sh runs
// BRAID_SOAK_CALLS (100,000) in each.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "support/collective_cases.hpp"
#include "support/random_reductions.hpp"
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
  const DataType types[] = {DataType::kFloat32,    DataType::kFloat64,   DataType::kInt32, DataType::kInt64,
                            DataType::kBFloat16,   DataType::kFloat16,   DataType::kUint8, DataType::kBool,
                            DataType::kFloat8E4M3, DataType::kFloat8E5M2};
  const std::size_t counts[] = {1, 3, 64, 1000, 4099, 65537, 300007};
  // Large messages one call in eight: most calls are the small ones a training step makes many of.
  auto drawCount = [&] { return counts[pick(8) == 0 ? std::size(counts) - 1 - pick(2) : pick(std::size(counts) - 2)]; };
  long baseline = 0;
  for (int i = 0; i < calls; ++i) {
    if (i == std::min(calls / 10, 200)) baseline = residentKb();  // after every buffer size has been seen
    if (pick(4) == 0) {
      RandomCase rc;
      rc.coll = static_cast<RandomColl>(pick(3));
      const DataType floats[] = {DataType::kFloat32,  DataType::kFloat64,    DataType::kFloat16,
                                 DataType::kBFloat16, DataType::kFloat8E4M3, DataType::kFloat8E5M2};
      rc.type = floats[pick(std::size(floats))];
      const ReduceKind floatOps[] = {ReduceKind::kSum, ReduceKind::kAvg, ReduceKind::kProd, ReduceKind::kMin,
                                     ReduceKind::kMax};
      rc.op = floatOps[pick(std::size(floatOps))];
      rc.count = drawCount();
      rc.inPlace = pick(2) == 0;
      rc.root = static_cast<int>(pick(static_cast<std::size_t>(comm.size())));
      rc.seed = rng();
      try {
        runRandomCase(comm, rc);
      } catch (const std::exception& e) {
        // The message names the case already.
        throw std::runtime_error("call " + std::to_string(i) + " (seed " + std::to_string(seed) + "): " + e.what());
      }
      continue;
    }
    Case c;
    c.coll = colls[pick(colls.size())];
    c.type = types[pick(std::size(types))];
    const auto ops = opsFor(c.type);
    c.op = ops[pick(ops.size())];
    c.count = drawCount();
    c.inPlace = supportsInPlace(c.coll) && pick(2) == 0;
    c.root = static_cast<int>(pick(static_cast<std::size_t>(comm.size())));
    c.async = pick(4) == 0;
    try {
      runCase(comm, c);
    } catch (const std::exception& e) {
      throw std::runtime_error("call " + std::to_string(i) + " (seed " + std::to_string(seed) + "), " + describe(c) +
                               ": " + e.what());
    }
  }
  // Resident memory is the process's: a rank that is a thread of a process shares it with every other rank of the
  // test and with the malloc arenas their threads warm up, so only a rank with a process of its own is measured.
  if (comm.transportName() == "memory") return;
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

// The world drawn too: each round picks 2-5 ranks and a transport (processes over shared memory or TCP, or threads
// over the in-memory transport) and soaks it for a tenth of the calls.
TEST(Soak, RandomWorldsAndTransports) {
  const int calls = soakCalls(400);
  std::mt19937 rng(20261201);
  const char* const transports[] = {"shm", "tcp", "threads"};
  for (int round = 0; round < 10; ++round) {
    const int ranks = 2 + static_cast<int>(rng() % 4);
    const std::string transport = transports[rng() % std::size(transports)];
    const unsigned seed = rng();
    const auto body = [&](Communicator& comm) { soak(comm, std::max(calls / 10, 1), seed); };
    const auto results = transport == "threads" ? runThreads(ranks, body) : runProcesses(ranks, body, 1800, transport);
    EXPECT_EQ(failures(results), "") << "round " << round << ": " << ranks << " ranks over " << transport << ", seed "
                                     << seed;
  }
}

}  // namespace
}  // namespace braid::testing
