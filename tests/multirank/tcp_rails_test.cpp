// Several rails (networks) between the ranks of a TCP mesh: each pair's streams take them in turn, and a large
// allreduce, whose frames spread over the streams, is correct. Loopback gives two rails on any machine:
// 127.0.0.1 and 127.0.0.2 are both this host.
#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <thread>

#include "algorithms/host/net/net_engine.hpp"
#include "algorithms/host/round_sync.hpp"
#include "bootstrap/tcp_mesh_rendezvous.hpp"
#include "bootstrap/tcp_store.hpp"

namespace braid {
namespace {

std::string hostOf(const std::string& address) { return address.substr(0, address.rfind(':')); }

TEST(TcpRails, StreamsTakeTheRailsInTurnAndCarryARing) {
  bootstrap::TcpStoreServer server;
  server.start(tcp::Address{"127.0.0.1", 0}, "");
  const int n = 3;
  std::vector<std::string> errors(n);
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      try {
        bootstrap::TcpStoreClient store(server.address(), "", Deadline::after(10));
        bootstrap::MeshRendezvous how;
        how.prefix = "rails";
        how.listenHost = "127.0.0.1,127.0.0.2";
        how.options.streams = 4;
        how.options.describe = host::describeInWords;
        auto mesh = bootstrap::joinTcpMesh(store, r, n, how, Deadline::after(30));
        for (int p = 0; p < n; ++p) {
          if (p == r) continue;
          const auto streams = mesh->streamAddresses(p);
          std::multiset<std::string> hosts;
          for (const auto& a : streams) hosts.insert(hostOf(a));
          if (streams.size() != 4 || hosts.count("127.0.0.1") != 2 || hosts.count("127.0.0.2") != 2) {
            std::string seen;
            for (const auto& a : streams) seen += a + " ";
            throw std::runtime_error(strCat("streams to rank ", p, " use ", seen, "(want two on each rail)"));
          }
        }
        host::NetPolicy ring{[](std::size_t) -> const tuning::AlgorithmDescriptor& {
                               return host::netAlgorithm(tuning::Algorithm::kTcpRing);
                             },
                             [](std::size_t) { return std::string("ring"); }};
        host::NetEngine engine(std::move(mesh), std::move(ring), 100);
        OpEnv env;
        env.context.rank = r;
        env.context.seq = 0;
        env.timeoutSeconds = 30;
        std::vector<std::int64_t> v(3u << 20);  // 24 MiB: many frames on every stream
        std::iota(v.begin(), v.end(), static_cast<std::int64_t>(r));
        engine.allreduce(v.data(), v.data(), v.size(), DataType::kInt64, ReduceKind::kSum, env);
        for (std::size_t i = 0; i < v.size(); ++i) {
          const auto want = static_cast<std::int64_t>(n * i + n * (n - 1) / 2);
          if (v[i] != want) throw std::runtime_error(strCat("element ", i, ": ", v[i], " != ", want));
        }
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

}  // namespace
}  // namespace braid
