// BRAID_HOST_ID lays one machine out as several hosts (as NCCL_HOSTID does): ranks with one id share memory, ranks
// with different ids talk over TCP. So the multi-host paths (placement, the hierarchical allreduce, TCP between
// "hosts" next to shared memory inside them) run in CI without network namespaces. Ranks are processes: each
// "host" is a shared-memory group of its own.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/tcp_mesh_rendezvous.hpp"
#include "core/communicator_impl.hpp"
#include "core/placement.hpp"
#include "core/this_host.hpp"
#include "support/collective_cases.hpp"
#include "support/internals.hpp"
#include "support/rank_runner.hpp"

namespace braid::testing {
namespace {

// Hosts of `perHost` ranks each, in blocks (0 0 1 1) or dealt round-robin (0 1 0 1: local ranks are not rank order).
std::string hostOf(int rank, int ranks, int perHost, bool dealt) {
  return "h" + std::to_string(dealt ? rank % (ranks / perHost) : rank / perHost);
}

Settings onHost(const std::string& id, const std::string& hierarchy) {
  Settings s = testSettings();
  s.transport = "auto";
  s.hostId = id;
  s.hierarchy = hierarchy;
  return s;
}

std::uint64_t hashOf(const void* data, std::size_t bytes) {
  std::uint64_t hash = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  return hash;
}

// Allreduces of inputs that round (so the order of the sum shows): every rank must hold the same bits, and the
// integer sums must be exact. Counts below the local size take the tail path; uneven counts both paths.
void checkAllreduces(Communicator& comm) {
  for (const std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, (std::size_t{1} << 18) + 3}) {
    std::vector<float> f(count);
    for (std::size_t i = 0; i < count; ++i) f[i] = 1.0f / static_cast<float>(i % 97 + comm.rank() + 3);
    comm.allreduce(f.data(), f.data(), count, DataType::kFloat32, ReduceKind::kSum);
    const std::uint64_t mine = hashOf(f.data(), count * 4);
    std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
    comm.allgather(&mine, all.data(), 1, DataType::kUint64);
    for (int r = 0; r < comm.size(); ++r) {
      require(all[static_cast<std::size_t>(r)] == mine,
              strCat("allreduce of ", count, " floats: rank ", r, "'s bits differ from rank ", comm.rank(), "'s"));
    }
    std::vector<std::int64_t> in(count), out(count, -1);
    for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<std::int64_t>(i) * (comm.rank() + 1) - 5;
    comm.allreduce(in.data(), out.data(), count, DataType::kInt64, ReduceKind::kSum);
    const std::int64_t ranks = comm.size();
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t want = static_cast<std::int64_t>(i) * ranks * (ranks + 1) / 2 - 5 * ranks;
      require(out[i] == want, strCat("allreduce of ", count, " int64: element ", i, " is ", out[i], ", not ", want));
    }
    comm.allreduce(in.data(), out.data(), count, DataType::kInt64, ReduceKind::kMax);
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t want = static_cast<std::int64_t>(i) * ranks - 5;
      require(out[i] == want, strCat("max of ", count, " int64: element ", i, " is ", out[i], ", not ", want));
    }
  }
}

class HostIdLayout : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(HostIdLayout, HierarchicalAllreduceAndEveryCollective) {
  // Plain variables, not a structured binding: clang 14 (the sanitizer build) cannot capture those in lambdas.
  const int ranks = std::get<0>(GetParam()), perHost = std::get<1>(GetParam());
  const bool dealt = std::get<2>(GetParam());
  const auto results = runProcessesWith(
      ranks, [&](int r) { return onHost(hostOf(r, ranks, perHost, dealt), "on"); },
      [&](Communicator& comm) {
        require(comm.hostCount() == ranks / perHost, strCat(comm.hostCount(), " hosts, expected ", ranks / perHost));
        require(comm.localSize() == perHost, strCat("local size ", comm.localSize(), ", expected ", perHost));
        require(std::string(comm.transportName()) == "tcp", "ranks on several hosts should talk over tcp");
        checkAllreduces(comm);
        // Described once the levels' engines exist (the first hierarchical call made them).
        const std::string algorithm = comm.allreduceAlgorithm(std::size_t{4} << 20);
        require(algorithm.rfind("hierarchical", 0) == 0 && algorithm.find("over shm inside") != std::string::npos,
                "a 4 MiB allreduce should be hierarchical with shared memory inside hosts, but runs " + algorithm);
        // Every collective, flat across the hosts, exact.
        for (const Coll coll : allColls()) {
          const bool reducing = reduces(coll);
          runCase(comm, Case{.coll = coll, .type = DataType::kInt32, .count = 1000, .root = ranks - 1});
          if (reducing) {
            runCase(comm, Case{.coll = coll, .type = DataType::kBFloat16, .op = ReduceKind::kMax, .count = 77});
          }
        }
      },
      180);
  EXPECT_EQ(failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Hosts, HostIdLayout,
                         ::testing::Values(std::tuple{4, 2, false}, std::tuple{4, 2, true}, std::tuple{6, 2, false},
                                           std::tuple{6, 3, true}),
                         [](const auto& info) {
                           const int perHost = std::get<1>(info.param);
                           return strCat(std::get<0>(info.param) / perHost, "hosts_of_", perHost,
                                         std::get<2>(info.param) ? "_dealt" : "_blocks");
                         });

// The flat path (BRAID_HIERARCHY=off) over the same layout, and one rank per id (no hierarchy to make).
TEST(HostId, FlatAndOneRankPerHost) {
  auto flat = runProcessesWith(
      4, [](int r) { return onHost("h" + std::to_string(r / 2), "off"); },
      [](Communicator& comm) {
        require(comm.allreduceAlgorithm(std::size_t{4} << 20).rfind("tcp/", 0) == 0,
                "BRAID_HIERARCHY=off should keep the flat tcp path");
        checkAllreduces(comm);
      });
  EXPECT_EQ(failures(flat), "");
  auto single = runProcessesWith(
      3, [](int r) { return onHost("h" + std::to_string(r), "auto"); },
      [](Communicator& comm) {
        require(comm.hostCount() == 3 && comm.localSize() == 1, "one rank per id: three hosts of one rank");
        checkAllreduces(comm);
      });
  EXPECT_EQ(failures(single), "");
}

// At creation every rank tells the others the NUMA node of its CPUs and the rate of the NICs TCP would take; each
// learns its host's NUMA nodes and the slowest NICs of all, alike on every rank. Forked ranks share one mask and one
// host, so each can work out what all of them must have learned.
TEST(HostId, RanksLearnTheirHostsNumaNodesAndTheSlowestNics) {
  auto results = runProcessesWith(
      4, [](int r) { return onHost("h" + std::to_string(r / 2), "auto"); },
      [](Communicator& comm) {
        const topology::Topology& here = core::thisHost();
        const int node = core::numaNodeOf(here, here.usableCpuIds);
        const int nic = core::nicMbpsOf(here, bootstrap::meshInterfaceNames(""));
        const core::Placement& p = test::implOf(comm).placement();
        require(p.localCpus == static_cast<int>(here.usableCpuIds.size()),
                strCat("the host's ranks may use ", p.localCpus, " CPUs, expected ", here.usableCpuIds.size()));
        require(p.localNumaNodes == (node >= 0 ? 1 : 0),
                strCat("the host's ranks span ", p.localNumaNodes, " NUMA nodes; this rank's CPUs are on node ", node));
        require(p.slowestNicMbps == nic, strCat("the slowest NICs move ", p.slowestNicMbps, " Mbit/s, expected ", nic));
        // The same facts on every rank.
        const std::int64_t mine[2] = {p.localNumaNodes, p.slowestNicMbps};
        std::vector<std::int64_t> all(2 * static_cast<std::size_t>(comm.size()));
        comm.allgather(mine, all.data(), 2, DataType::kInt64);
        for (int r = 0; r < comm.size(); ++r) {
          require(
              all[2 * static_cast<std::size_t>(r)] == mine[0] && all[2 * static_cast<std::size_t>(r) + 1] == mine[1],
              strCat("rank ", r, " learned other facts than rank ", comm.rank()));
        }
      });
  EXPECT_EQ(failures(results), "");
}

TEST(HostId, ALineBreakIsRefused) {
  auto results = runProcessesWith(
      2, [](int) { return onHost("a\nb", "auto"); }, [](Communicator&) {}, 30);
  ASSERT_EQ(results.size(), 2u);
  for (const std::string& r : results) EXPECT_NE(r.find("BRAID_HOST_ID"), std::string::npos) << r;
}

}  // namespace
}  // namespace braid::testing
