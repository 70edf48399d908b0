// One rank of a job whose ranks sit on different "hosts" (tests/net/netns_hosts.sh starts them in network
// namespaces): joins through BRAID_RANK / BRAID_WORLD_SIZE / BRAID_ROOT_ADDR / BRAID_TOKEN, checks that ranks on
// different hosts were not wired through shared memory and that the communicator's placement (hosts, local ranks)
// matches the hosts the ranks really have, and checks int32 allreduces to the exact sum.
// Exit status 0 on success; otherwise the error is printed and the status is 1.
//
// With --every-collective it then runs every collective on several types, ops, sizes, roots, in place and out of
// place, each result checked exactly (tests/support/collective_cases.hpp).
// With --then-cut it goes on allreducing until the link between the hosts is cut (netns_hosts.sh ... cut), and
// succeeds when that ends in PeerLost within BRAID_HEARTBEAT_TIMEOUT + 1 s of the last call that completed.
// With --then-flap the link goes down for 1 s and comes back: every call completes, exactly.
#include <algorithm>
#include <braid/braid.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/communicator_impl.hpp"
#include "support/collective_cases.hpp"
#include "support/internals.hpp"
#include "transport/host_identity.hpp"

namespace {

constexpr std::size_t kIdentityBytes = 128;  // boot id (36) + "/net:[" + a 64-bit inode + "]" fits with room

// Every rank's hostIdentity(), gathered through the communicator itself.
std::vector<std::string> gatherIdentities(braid::Communicator& comm) {
  std::vector<char> mine(kIdentityBytes, '\0');
  const std::string id = braid::transport::hostIdentity();
  std::memcpy(mine.data(), id.data(), std::min(id.size(), kIdentityBytes - 1));
  std::vector<char> all(kIdentityBytes * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine.data(), all.data(), kIdentityBytes, braid::DataType::kUint8);
  std::vector<std::string> out;
  for (int r = 0; r < comm.size(); ++r) out.emplace_back(all.data() + r * kIdentityBytes);
  return out;
}

// rank r contributes (r + 1) * (i % 1000 + 1): small integers, so the sum is exact and known in closed form.
int checkAllreduce(braid::Communicator& comm, std::size_t count) {
  const int rank = comm.rank();
  const int size = comm.size();
  std::vector<std::int32_t> send(count), recv(count, -1);
  for (std::size_t i = 0; i < count; ++i) send[i] = (rank + 1) * static_cast<std::int32_t>(i % 1000 + 1);
  comm.allreduce(send.data(), recv.data(), count, braid::DataType::kInt32, braid::ReduceKind::kSum);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::int32_t expected = static_cast<std::int32_t>(i % 1000 + 1) * size * (size + 1) / 2;
    if (recv[i] != expected && wrong++ == 0) {
      std::fprintf(stderr, "rank %d: allreduce of %zu int32: element %zu is %d, expected %d\n", rank, count, i, recv[i],
                   expected);
    }
  }
  if (wrong) std::fprintf(stderr, "rank %d: allreduce of %zu int32: %zu wrong elements\n", rank, count, wrong);
  return wrong ? 1 : 0;
}

}  // namespace

// Hosts numbered by their lowest rank, local ranks in rank order: what core::Placement promises.
bool placementMatches(braid::Communicator& comm, const std::vector<std::string>& ids) {
  std::vector<std::string> hosts;
  int localRank = 0, localSize = 0;
  bool ok = true;
  for (int r = 0; r < comm.size(); ++r) {
    auto it = std::find(hosts.begin(), hosts.end(), ids[r]);
    if (it == hosts.end()) it = hosts.insert(hosts.end(), ids[r]);
    ok &= comm.hostOf(r) == static_cast<int>(it - hosts.begin());
    if (ids[r] == ids[comm.rank()]) {
      localRank += r < comm.rank() ? 1 : 0;
      ++localSize;
    }
  }
  ok &= comm.hostCount() == static_cast<int>(hosts.size()) && comm.localRank() == localRank &&
        comm.localSize() == localSize;
  if (!ok) {
    std::fprintf(stderr, "rank %d: placement says %d hosts, local rank %d of %d; the identities say %zu, %d of %d\n",
                 comm.rank(), comm.hostCount(), comm.localRank(), comm.localSize(), hosts.size(), localRank, localSize);
  }
  return ok;
}

// Every collective, on types of each width class, sum and max, three sizes (one element, an odd count, and one
// past a TCP frame), in place and out of place where the collective has it, rooted ones at the last rank, and one
// async call each; returns 0 when every result was exact.
int runEveryCollective(braid::Communicator& comm) {
  using braid::testing::Case;
  int cases = 0;
  for (const braid::testing::Coll coll : braid::testing::allColls()) {
    for (const braid::DataType type :
         {braid::DataType::kFloat32, braid::DataType::kInt64, braid::DataType::kBFloat16}) {
      const std::vector<braid::ReduceKind> ops =
          braid::testing::reduces(coll)
              ? std::vector<braid::ReduceKind>{braid::ReduceKind::kSum, braid::ReduceKind::kMax}
              : std::vector<braid::ReduceKind>{braid::ReduceKind::kSum};
      for (const braid::ReduceKind op : ops) {
        for (const std::size_t count : {std::size_t{1}, std::size_t{4099}, std::size_t{70001}}) {
          for (const bool inPlace : {false, true}) {
            if (inPlace && !braid::testing::supportsInPlace(coll)) continue;
            Case c{coll, type, op, count, inPlace, comm.size() - 1, count == 4099};
            try {
              braid::testing::runCase(comm, c);
            } catch (const std::exception& e) {
              std::fprintf(stderr, "rank %d: %s: %s\n", comm.rank(), braid::testing::describe(c).c_str(), e.what());
              return 1;
            }
            ++cases;
          }
        }
      }
    }
  }
  std::printf("rank %d: %d collective cases exact\n", comm.rank(), cases);
  return 0;
}

// Hosts of several ranks each: from 2 MiB the allreduce goes hierarchical, and its results (of inputs that round,
// unlike runCase's) are the same bits on every rank. Returns 0 when both hold.
int checkHierarchy(braid::Communicator& comm) {
  const std::string algorithm = comm.allreduceAlgorithm(std::size_t{4} << 20);
  std::printf("rank %d: a 4 MiB allreduce runs %s\n", comm.rank(), algorithm.c_str());
  const bool expected = comm.hostCount() > 1 && comm.localSize() > 1;
  if (expected != (algorithm.rfind("hierarchical", 0) == 0)) {
    std::fprintf(stderr, "rank %d: %d hosts of %d ranks, but a 4 MiB allreduce runs %s\n", comm.rank(),
                 comm.hostCount(), comm.localSize(), algorithm.c_str());
    return 1;
  }
  for (const std::size_t count : {std::size_t{1} << 20, (std::size_t{1} << 20) + 3}) {
    std::vector<float> buf(count);
    for (std::size_t i = 0; i < count; ++i) buf[i] = 1.0f / static_cast<float>(i % 97 + comm.rank() + 3);
    comm.allreduce(buf.data(), buf.data(), count, braid::DataType::kFloat32, braid::ReduceKind::kSum);
    std::uint64_t hash = 1469598103934665603ull;
    for (float v : buf) {
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      hash = (hash ^ bits) * 1099511628211ull;
    }
    std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
    comm.allgather(&hash, all.data(), 1, braid::DataType::kUint64);
    for (int r = 0; r < comm.size(); ++r) {
      if (all[static_cast<std::size_t>(r)] != hash) {
        std::fprintf(stderr, "rank %d: allreduce of %zu floats: rank %d's result differs from this rank's\n",
                     comm.rank(), count, r);
        return 1;
      }
    }
  }
  std::printf("rank %d: allreduce results bitwise identical on every rank\n", comm.rank());
  return 0;
}

// Allreduces until one fails; returns 0 when that failure is PeerLost within the heartbeat timeout + 1 s of the
// last success (the cut), else 1.
int loopUntilCut(braid::Communicator& comm) {
  using Clock = std::chrono::steady_clock;
  const double bound = braid::test::implOf(comm).settings().heartbeatTimeoutSeconds + 1;
  std::vector<float> buf(1 << 16, 1.0f);
  std::printf("rank %d: LOOPING\n", comm.rank());
  std::fflush(stdout);
  auto last = Clock::now();
  try {
    for (;;) {
      comm.allreduce(buf.data(), buf.data(), buf.size(), braid::DataType::kFloat32, braid::ReduceKind::kSum);
      last = Clock::now();
    }
  } catch (const braid::Error& e) {
    const double gap = std::chrono::duration<double>(Clock::now() - last).count();
    std::printf("rank %d: %.2f s after the last allreduce: %s\n", comm.rank(), gap, e.what());
    if (e.code() != braid::ErrorCode::kPeerLost) return 1;
    return gap < bound ? 0 : 1;
  }
}

// --then-flap: allreduces for 8 s while netns_hosts.sh takes host 1's link down for 1 s and up again, shorter than
// the heartbeat timeout it sets (5 s): a flap is not a death. Every call must complete, exactly, and calls must go on
// after the outage (the longest gap between two calls shows the outage was crossed, not missed).
int loopThroughFlap(braid::Communicator& comm) {
  using Clock = std::chrono::steady_clock;
  std::vector<float> in(1 << 16), out(1 << 16);
  std::printf("rank %d: LOOPING\n", comm.rank());
  std::fflush(stdout);
  const auto end = Clock::now() + std::chrono::seconds(8);
  auto last = Clock::now();
  double longestGap = 0;
  long calls = 0;
  for (;; ++calls) {
    // The ranks stop together: each says whether its 8 s are up, and the first to say so stops them all.
    int go = Clock::now() < end ? 1 : 0;
    comm.allreduce(&go, &go, 1, braid::DataType::kInt32, braid::ReduceKind::kMin);
    if (go == 0) break;
    for (std::size_t j = 0; j < in.size(); ++j) in[j] = static_cast<float>((calls + j) % 9 + comm.rank());
    comm.allreduce(in.data(), out.data(), in.size(), braid::DataType::kFloat32, braid::ReduceKind::kSum);
    const float ranks = static_cast<float>(comm.size() * (comm.size() - 1) / 2);
    for (std::size_t j = 0; j < out.size(); ++j) {
      const float want = static_cast<float>((calls + j) % 9) * comm.size() + ranks;
      if (out[j] != want) {
        std::printf("rank %d: call %ld element %zu is %g, expected %g\n", comm.rank(), calls, j, out[j], want);
        return 1;
      }
    }
    longestGap = std::max(longestGap, std::chrono::duration<double>(Clock::now() - last).count());
    last = Clock::now();
  }
  std::printf("rank %d: %ld exact allreduces, the longest gap between two %.2f s\n", comm.rank(), calls, longestGap);
  return longestGap >= 0.8 ? 0 : 1;  // the link was down for 1 s: a shorter gap means the flap was not crossed
}

int main(int argc, char** argv) {
  const bool thenCut = argc > 1 && std::strcmp(argv[1], "--then-cut") == 0;
  const bool thenFlap = argc > 1 && std::strcmp(argv[1], "--then-flap") == 0;
  const bool everyCollective = argc > 1 && std::strcmp(argv[1], "--every-collective") == 0;
  try {
    auto comm = braid::Communicator::fromEnvironment();
    const std::string transport = comm->transportName();
    const auto ids = gatherIdentities(*comm);
    std::printf("rank %d of %d: transport %s, host %s\n", comm->rank(), comm->size(), transport.c_str(),
                ids[comm->rank()].c_str());
    std::fflush(stdout);
    // Shared memory between ranks of different hosts would be a bug; across network namespaces it even "works"
    // (one kernel, one /dev/shm), which would hide the missing cross-host path.
    const bool crossHost = std::any_of(ids.begin(), ids.end(), [&](const std::string& s) { return s != ids[0]; });
    if (crossHost && transport == "shm") {
      std::fprintf(stderr, "rank %d: ranks on different hosts (hostIdentity differs) were joined over shm\n",
                   comm->rank());
      return 1;
    }
    // What the communicator learned at creation agrees with the identities gathered here.
    if (!placementMatches(*comm, ids)) return 1;
    int failures = 0;
    for (const std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{1} << 20}) {
      failures += checkAllreduce(*comm, count);
    }
    if (failures == 0) std::printf("rank %d: allreduce sums exact\n", comm->rank());
    if (failures) return 1;
    if (everyCollective) return checkHierarchy(*comm) != 0 ? 1 : runEveryCollective(*comm);
    return thenCut ? loopUntilCut(*comm) : thenFlap ? loopThroughFlap(*comm) : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "netns_rank: %s\n", e.what());
    return 1;
  }
}
