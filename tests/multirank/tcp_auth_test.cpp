// Who may join a TCP mesh: connections with garbage, without the secret or with a wrong one are dropped while the
// mesh forms, and the ranks that know the secret still connect and work.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <thread>

#include "algorithms/host/net/net_engine.hpp"
#include "algorithms/host/round_sync.hpp"
#include "bootstrap/tcp_mesh_rendezvous.hpp"
#include "bootstrap/tcp_store.hpp"
#include "transport/tcp/handshake.hpp"

namespace braid {
namespace {

std::span<const std::byte> bytesOf(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

TEST(TcpAuth, IntrudersAreDroppedAndTheJobCompletes) {
  bootstrap::TcpStoreServer server;
  server.start(tcp::Address{"127.0.0.1", 0}, "store-token");
  const std::string token = "0123456789abcdef0123456789abcdef";
  auto connect = [&] {
    return std::make_unique<bootstrap::TcpStoreClient>(server.address(), "store-token", Deadline::after(10));
  };
  bootstrap::MeshRendezvous how;
  how.prefix = "auth";
  how.listenHost = "127.0.0.1";
  how.token = token;
  how.options.describe = host::describeInWords;

  // The intruders connect while rank 0 waits for rank 1's address, so they sit in rank 0's backlog ahead of rank 1.
  std::latch intrudersConnected(1);
  std::atomic<int> intruderOutcomes{0};
  std::thread intruder([&] {
    auto store = connect();
    const auto root = tcp::Address::parse(store->get("auth/addr/0", Deadline::after(10)));
    // 1. Garbage: 64 bytes that are no hello.
    tcp::Socket garbage = tcp::connectTo(root, Deadline::after(5));
    std::vector<std::byte> junk(64, std::byte{0x5a});
    garbage.sendAll(junk, Deadline::after(5));
    // 2. A connection that says nothing and closes.
    { tcp::Socket silent = tcp::connectTo(root, Deadline::after(5)); }
    // 3. A well-formed hello with the wrong secret: the acceptor's proof does not check out, and it hangs up.
    tcp::CommId id{};
    const auto hex = store->get("auth/comm_id", Deadline::after(10));
    for (std::size_t i = 0; i < id.size(); ++i) {
      id[i] = static_cast<std::byte>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    }
    tcp::Socket wrong = tcp::connectTo(root, Deadline::after(5));
    std::thread proof([&] {
      try {
        tcp::helloAsConnector(wrong, id, bytesOf("not-the-secret-not-the-secret-00"), 1, 0, Deadline::after(20));
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kInvalidArgument) ++intruderOutcomes;  // the root failed to prove our secret
      }
    });
    intrudersConnected.count_down();
    std::byte b;
    try {
      garbage.recvAll(std::span(&b, 1), Deadline::after(20));
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kPeerLost) ++intruderOutcomes;  // hung up on
    }
    proof.join();
  });

  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      try {
        auto store = connect();
        if (r == 1) intrudersConnected.wait();
        auto mesh = bootstrap::joinTcpMesh(*store, r, 2, how, Deadline::after(30));
        // A direct allreduce of one int: the policy needs no table here.
        host::NetPolicy direct{[](std::size_t) -> const tuning::AlgorithmDescriptor& {
                                 return host::netAlgorithm(tuning::Algorithm::kTcpDirect);
                               },
                               [](std::size_t) { return std::string("direct"); }};
        host::NetEngine engine(std::move(mesh), std::move(direct), 100);
        OpEnv env;
        env.context.rank = r;
        env.context.seq = 0;
        env.timeoutSeconds = 20;
        int x = r + 1;
        engine.allreduce(&x, &x, 1, DataType::kInt32, ReduceKind::kSum, env);
        if (x != 3) errors[r] = "allreduce gave " + std::to_string(x);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  intruder.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_EQ(intruderOutcomes.load(), 2);
}

TEST(TcpAuth, WrongSecretBetweenRanksFailsNamingTheCause) {
  bootstrap::TcpStoreServer server;
  server.start(tcp::Address{"127.0.0.1", 0}, "");
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      try {
        bootstrap::TcpStoreClient store(server.address(), "", Deadline::after(10));
        bootstrap::MeshRendezvous how;
        how.prefix = "wrong";
        how.listenHost = "127.0.0.1";
        how.token = r == 0 ? "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" : "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
        bootstrap::joinTcpMesh(store, r, 2, how, Deadline::after(r == 0 ? 3 : 10));
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_NE(errors[1].find("secret"), std::string::npos) << errors[1];
  EXPECT_NE(errors[0].find("never connected"), std::string::npos) << errors[0];
}

}  // namespace
}  // namespace braid
