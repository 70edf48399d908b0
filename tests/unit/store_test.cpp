// TCP sockets and the authenticated TCP store. Loopback only. (The unique id: unique_id_test.cpp.)
#include "bootstrap/store.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "bootstrap/tcp_store.hpp"
#include "support/free_port.hpp"
#include "transport/tcp/socket.hpp"

namespace braid {
namespace {

using testing::freePort;

using bootstrap::TcpStoreClient;
using bootstrap::TcpStoreServer;
using tcp::Address;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

Address loopback(std::uint16_t port = 0) { return Address{"127.0.0.1", port}; }

// Runs fn(i) on n threads and returns the messages of any exceptions they threw.
std::vector<std::string> runThreads(int n, const std::function<void(int)>& fn) {
  std::mutex mutex;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        fn(i);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        errors.push_back(strCat("thread ", i, ": ", e.what()));
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

std::span<const std::byte> bytesOf(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { server_.start(loopback(), kToken); }
  std::unique_ptr<TcpStoreClient> client(double connectSeconds = 5) {
    return std::make_unique<TcpStoreClient>(server_.address(), kToken, Deadline::after(connectSeconds));
  }

  static constexpr const char* kToken = "0123456789abcdef0123456789abcdef";
  TcpStoreServer server_;
};

// ---- addresses and sockets ----

TEST(TcpAddress, Parse) {
  EXPECT_EQ(Address::parse("127.0.0.1:80"), (Address{"127.0.0.1", 80}));
  EXPECT_EQ(Address::parse("localhost:65535"), (Address{"localhost", 65535}));
  EXPECT_EQ(Address::parse("[::1]:0"), (Address{"::1", 0}));
  EXPECT_EQ(Address::parse("[::1]:7").toString(), "[::1]:7");
  EXPECT_EQ(Address::parse("10.0.0.1:29500").toString(), "10.0.0.1:29500");
  for (const char* bad :
       {"", "host", "host:", ":80", "1.2.3.4:65536", "1.2.3.4:8x", "::1:80", "[::1]80", "[::1", "[]:80", "h:-1"}) {
    try {
      Address::parse(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(TcpSocket, SendRecvAndPeerLoss) {
  tcp::Socket listener = tcp::listenOn(loopback(), 4);
  const Address addr = listener.localAddress();
  EXPECT_EQ(addr.host, "127.0.0.1");
  EXPECT_NE(addr.port, 0);
  tcp::Socket a = tcp::connectTo(addr, Deadline::after(5));
  tcp::Socket b = listener.accept(Deadline::after(5));

  // Larger than the socket buffers, so both sides really go through poll.
  std::string big(8 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131);
  std::thread sender([&] { a.sendAll(bytesOf(big), Deadline::after(10)); });
  std::string got(big.size(), '\0');
  b.recvAll(std::as_writable_bytes(std::span(got.data(), got.size())), Deadline::after(10));
  sender.join();
  EXPECT_TRUE(got == big);

  // Nothing arrives: Timeout, promptly.
  std::array<std::byte, 8> buf{};
  const auto start = Clock::now();
  try {
    b.recvAll(buf, Deadline::after(0.2));
    FAIL() << "expected Timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
  }
  EXPECT_GE(secondsSince(start), 0.19);
  EXPECT_LT(secondsSince(start), 2.0);

  // The peer sends half a message and closes: PeerLost.
  const std::string half = "1234";
  a.sendAll(bytesOf(half), Deadline::after(5));
  a.close();
  try {
    b.recvAll(buf, Deadline::after(5));
    FAIL() << "expected PeerLost";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
    EXPECT_NE(e.message().find("4 of 8 bytes"), std::string::npos) << e.what();
  }

  // No accept pending: Timeout.
  EXPECT_THROW(listener.accept(Deadline::after(0.05)), Error);
}

TEST(TcpSocket, ConnectToClosedPortTimesOut) {
  const Address addr = loopback(freePort());
  const auto start = Clock::now();
  try {
    tcp::connectTo(addr, Deadline::after(0.3));
    FAIL() << "expected Timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
    EXPECT_NE(e.message().find(addr.toString()), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("refused"), std::string::npos) << e.what();
  }
  EXPECT_LT(secondsSince(start), 2.0);
  EXPECT_THROW(TcpStoreClient(addr, "t", Deadline::after(0.2)), Error);
}

TEST(TcpSocket, HostAddressForPeersIsIpv4) {
  const std::string host = tcp::hostAddressForPeers();
  EXPECT_EQ(std::count(host.begin(), host.end(), '.'), 3) << host;
}

// ---- the store ----

TEST_F(StoreTest, SetGetAcrossClients) {
  constexpr int kThreads = 6;
  auto errors = runThreads(kThreads, [&](int i) {
    auto c = client();
    c->set(strCat("key/", i), strCat("value ", i));
    for (int j = 0; j < kThreads; ++j) {
      const std::string v = c->get(strCat("key/", j), Deadline::after(10));
      if (v != strCat("value ", j)) throw std::runtime_error("got '" + v + "'");
    }
  });
  EXPECT_TRUE(errors.empty()) << errors.front();
  // Overwrite, empty and binary values.
  auto c = client();
  c->set("key/0", "");
  EXPECT_EQ(c->get("key/0", Deadline::after(1)), "");
  const std::string binary("a\0b\xff", 4);
  c->set("bin", binary);
  EXPECT_EQ(c->get("bin", Deadline::after(1)), binary);
}

TEST_F(StoreTest, GetBlocksUntilAnotherClientSets) {
  auto waiter = client();
  auto setter = client();
  std::string got;
  const auto start = Clock::now();
  std::thread t([&] { got = waiter->get("late", Deadline::after(10)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  setter->set("late", "here");
  t.join();
  EXPECT_EQ(got, "here");
  EXPECT_GE(secondsSince(start), 0.14);
  EXPECT_LT(secondsSince(start), 3.0);
}

TEST_F(StoreTest, GetTimeoutNamesKeyAndClientStaysUsable) {
  auto c = client();
  const auto start = Clock::now();
  try {
    c->get("missing/key", Deadline::after(0.2));
    FAIL() << "expected Timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
    EXPECT_NE(e.message().find("missing/key"), std::string::npos) << e.what();
  }
  EXPECT_GE(secondsSince(start), 0.19);
  EXPECT_LT(secondsSince(start), 2.0);
  // An expired deadline is a non-blocking probe.
  EXPECT_THROW(c->get("missing/key", Deadline::after(0)), Error);
  c->set("present", "1");
  EXPECT_EQ(c->get("present", Deadline::after(0)), "1");
}

TEST_F(StoreTest, AddIsAtomic) {
  constexpr int kThreads = 8;
  constexpr int kAdds = 1000;
  std::mutex mutex;
  std::set<std::int64_t> seen;
  auto errors = runThreads(kThreads, [&](int) {
    auto c = client();
    std::vector<std::int64_t> mine;
    for (int i = 0; i < kAdds; ++i) mine.push_back(c->add("counter", 1));
    std::lock_guard<std::mutex> lock(mutex);
    seen.insert(mine.begin(), mine.end());
  });
  ASSERT_TRUE(errors.empty()) << errors.front();
  // Every intermediate value was returned exactly once.
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kThreads * kAdds));
  EXPECT_EQ(*seen.begin(), 1);
  EXPECT_EQ(*seen.rbegin(), kThreads * kAdds);
  auto c = client();
  EXPECT_EQ(c->get("counter", Deadline::after(1)), std::to_string(kThreads * kAdds));
  EXPECT_EQ(c->add("counter", -8000), 0);
  EXPECT_EQ(c->add("fresh", -5), -5);
}

TEST_F(StoreTest, OneClientSharedByThreads) {
  auto c = client();
  auto errors = runThreads(4, [&](int i) {
    for (int k = 0; k < 200; ++k) c->add("shared", 1);
    c->set(strCat("t", i), "done");
  });
  ASSERT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(c->add("shared", 0), 800);
}

TEST_F(StoreTest, AddOnTextIsInvalidArgument) {
  auto c = client();
  c->set("text", "hello");
  try {
    c->add("text", 1);
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(e.message().find("'hello'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c->add("n", 2), 2);  // the connection is still fine
}

TEST_F(StoreTest, LargeValuesAndLimits) {
  auto c = client();
  std::string big(16 << 20, 'x');
  big[12345] = 'y';
  c->set("big", big);
  EXPECT_TRUE(c->get("big", Deadline::after(10)) == big);
  try {
    c->set("huge", std::string(bootstrap::wire::kMaxValueBytes + 1, 'z'));
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
  EXPECT_THROW(c->set(std::string(bootstrap::wire::kMaxKeyBytes + 1, 'k'), "v"), Error);
  EXPECT_THROW(c->set("", "v"), Error);
  c->set("after", "ok");
  EXPECT_EQ(c->get("after", Deadline::after(1)), "ok");
}

TEST_F(StoreTest, AllGatherAndBarrierWithEightRanks) {
  constexpr int kRanks = 8;
  constexpr int kRounds = 3;
  std::atomic<int> arrived{0};
  auto errors = runThreads(kRanks, [&](int rank) {
    auto c = client();
    const auto all = bootstrap::allGather(*c, "ag", rank, kRanks, strCat("rank-", rank), Deadline::after(10));
    if (all.size() != kRanks) throw std::runtime_error("wrong size");
    for (int r = 0; r < kRanks; ++r) {
      if (all[r] != strCat("rank-", r)) throw std::runtime_error(strCat("slot ", r, " holds '", all[r], "'"));
    }
    // Reusing one barrier name: nobody leaves round k before everyone arrived in round k.
    for (int round = 0; round < kRounds; ++round) {
      arrived.fetch_add(1);
      bootstrap::barrier(*c, "b", rank, kRanks, Deadline::after(10));
      if (arrived.load() < kRanks * (round + 1)) throw std::runtime_error(strCat("left round ", round, " early"));
    }
  });
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST_F(StoreTest, BarrierTimeoutSaysWhoArrived) {
  auto c = client();
  try {
    bootstrap::barrier(*c, "lonely", 0, 3, Deadline::after(0.2));
    FAIL() << "expected Timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
    EXPECT_NE(e.message().find("1 of 3 ranks arrived"), std::string::npos) << e.what();
  }
  try {
    bootstrap::allGather(*c, "partial", 0, 2, "mine", Deadline::after(0.1));
    FAIL() << "expected Timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
    EXPECT_EQ(e.context().peer, 1) << e.what();
    EXPECT_NE(e.message().find("partial/1"), std::string::npos) << e.what();
  }
}

TEST_F(StoreTest, WrongTokenIsRejectedClearly) {
  try {
    TcpStoreClient bad(server_.address(), "not-the-token", Deadline::after(5));
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(e.message().find("rejected the job token (BRAID_TOKEN differs?)"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find(server_.address().toString()), std::string::npos) << e.what();
  }
  // The server is unaffected.
  auto c = client();
  c->set("k", "v");
  EXPECT_EQ(c->get("k", Deadline::after(1)), "v");
}

TEST(Store, EmptyTokenWorksOnBothSides) {
  TcpStoreServer server;
  server.start(loopback(), "");
  TcpStoreClient c(server.address(), "", Deadline::after(5));
  c.set("k", "v");
  EXPECT_EQ(c.get("k", Deadline::after(1)), "v");
  EXPECT_THROW(TcpStoreClient(server.address(), "x", Deadline::after(5)), Error);
}

// Reads the server's greeting off a raw connection; returns the nonce.
std::string readGreeting(tcp::Socket& s) {
  std::array<std::byte, bootstrap::wire::kHeaderBytes + bootstrap::wire::kNonceBytes> hello{};
  s.recvAll(hello, Deadline::after(5));
  return std::string(reinterpret_cast<const char*>(hello.data()) + bootstrap::wire::kHeaderBytes,
                     bootstrap::wire::kNonceBytes);
}

// True when the server closes the connection within a few seconds.
bool serverHangsUp(tcp::Socket& s) {
  std::array<std::byte, 64> sink{};
  const auto start = Clock::now();
  while (secondsSince(start) < 5) {
    try {
      s.recvSome(sink);
    } catch (const Error& e) {
      return e.code() == ErrorCode::kPeerLost;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// A raw connection that has passed the handshake, for sending hand-made frames.
tcp::Socket authenticatedRawConnection(const Address& server, const std::string& token) {
  using namespace bootstrap::wire;
  tcp::Socket s = tcp::connectTo(server, Deadline::after(5));
  const std::string nonce = readGreeting(s);
  const auto proof = authProof(token, bytesOf(nonce));
  Header h;
  h.op = Op::kAuth;
  h.valueBytes = kProofBytes;
  s.sendAll(encodeHeader(h), Deadline::after(5));
  s.sendAll(proof, Deadline::after(5));
  std::array<std::byte, kHeaderBytes> result{};
  s.recvAll(result, Deadline::after(5));
  Header r;
  std::string why;
  if (!decodeHeader(result, &r, &why) || r.op != Op::kAuthResult || r.status != Status::kOk) {
    throw std::runtime_error("raw handshake failed: " + why);
  }
  return s;
}

TEST_F(StoreTest, GarbageClientsDoNotDisturbTheServer) {
  using namespace bootstrap::wire;
  auto good = client();
  good->set("before", "1");

  // Random bytes instead of the authentication frame.
  {
    tcp::Socket s = tcp::connectTo(server_.address(), Deadline::after(5));
    readGreeting(s);
    std::mt19937 rng(42);
    std::string noise(4096, '\0');
    for (auto& ch : noise) ch = static_cast<char>(rng());
    s.sendAll(bytesOf(noise), Deadline::after(5));
    EXPECT_TRUE(serverHangsUp(s));
  }
  // A well-formed header announcing a 2 GiB body before authentication.
  {
    tcp::Socket s = tcp::connectTo(server_.address(), Deadline::after(5));
    readGreeting(s);
    Header h;
    h.op = Op::kAuth;
    h.valueBytes = 0x80000000u;
    s.sendAll(encodeHeader(h), Deadline::after(5));
    EXPECT_TRUE(serverHangsUp(s));
  }
  // Authenticated, then an oversize set (the limit is checked before anything is allocated).
  {
    tcp::Socket s = authenticatedRawConnection(server_.address(), kToken);
    Header h;
    h.op = Op::kSet;
    h.keyBytes = 3;
    h.valueBytes = 0xFFFFFFFFu;
    s.sendAll(encodeHeader(h), Deadline::after(5));
    EXPECT_TRUE(serverHangsUp(s));
  }
  // Authenticated, then an unknown op.
  {
    tcp::Socket s = authenticatedRawConnection(server_.address(), kToken);
    Header h;
    h.op = static_cast<Op>(99);
    h.keyBytes = 1;
    s.sendAll(encodeHeader(h), Deadline::after(5));
    EXPECT_TRUE(serverHangsUp(s));
  }
  // Connects and disconnects without a word; and a client that vanishes while its get is parked.
  { tcp::Socket s = tcp::connectTo(server_.address(), Deadline::after(5)); }
  {
    tcp::Socket s = authenticatedRawConnection(server_.address(), kToken);
    Header h;
    h.op = Op::kGet;
    h.keyBytes = 5;
    h.valueBytes = 8;
    s.sendAll(encodeHeader(h), Deadline::after(5));
    const std::string body = std::string("never") + std::string(8, '\x7f');  // wait ~a long time
    s.sendAll(bytesOf(body), Deadline::after(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // The established client and new ones are served as before.
  EXPECT_EQ(good->get("before", Deadline::after(1)), "1");
  good->set("after", "2");
  auto fresh = client();
  EXPECT_EQ(fresh->get("after", Deadline::after(1)), "2");
  EXPECT_EQ(fresh->add("n", 5), 5);
}

TEST_F(StoreTest, IdleServerDoesNotSpin) {
  // A parked get, an idle unauthenticated connection, a client that hung up mid-get and one rejected for its
  // token: none of them may keep the server thread busy.
  auto waiter = client();
  std::thread parked([&] { EXPECT_THROW(waiter->get("slow", Deadline::after(1.0)), Error); });
  tcp::Socket idle = tcp::connectTo(server_.address(), Deadline::after(5));
  {
    tcp::Socket gone = authenticatedRawConnection(server_.address(), kToken);
    bootstrap::wire::Header h;
    h.op = bootstrap::wire::Op::kGet;
    h.keyBytes = 4;
    h.valueBytes = 8;
    gone.sendAll(bootstrap::wire::encodeHeader(h), Deadline::after(5));
    gone.sendAll(bytesOf(std::string("gone") + std::string(8, '\x7f')), Deadline::after(5));
  }
  EXPECT_THROW(TcpStoreClient(server_.address(), "wrong", Deadline::after(5)), Error);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  timespec before{}, after{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &before);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &after);
  const double cpu = (after.tv_sec - before.tv_sec) + 1e-9 * (after.tv_nsec - before.tv_nsec);
  EXPECT_LT(cpu, 0.05) << "the process used " << cpu << " s of CPU while idle";
  parked.join();
}

TEST_F(StoreTest, HandshakeTimeoutWhenPeerIsNotAStore) {
  tcp::Socket silent = tcp::listenOn(loopback(), 4);  // accepts (in the kernel) but never speaks
  const auto start = Clock::now();
  try {
    TcpStoreClient c(silent.localAddress(), kToken, Deadline::after(0.3));
    FAIL() << "expected Timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
    EXPECT_NE(e.message().find("handshake"), std::string::npos) << e.what();
  }
  EXPECT_LT(secondsSince(start), 2.0);
}

TEST(Store, ConnectRetriesUntilServerAppears) {
  const Address addr = loopback(freePort());
  TcpStoreServer server;
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server.start(addr, "tok");
  });
  const auto start = Clock::now();
  std::unique_ptr<TcpStoreClient> c;
  try {
    c = std::make_unique<TcpStoreClient>(addr, "tok", Deadline::after(10));
  } catch (...) {
    late.join();
    throw;
  }
  late.join();
  EXPECT_GE(secondsSince(start), 0.19);
  c->set("k", "v");
  EXPECT_EQ(c->get("k", Deadline::after(1)), "v");
}

TEST(Store, StopWhileClientWaitsGivesPeerLost) {
  TcpStoreServer server;
  server.start(loopback(), "tok");
  TcpStoreClient c(server.address(), "tok", Deadline::after(5));
  std::optional<ErrorCode> code;
  Clock::time_point failedAt;
  std::thread waiter([&] {
    try {
      c.get("never", Deadline::after(30));
    } catch (const Error& e) {
      code = e.code();
      failedAt = Clock::now();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto stopAt = Clock::now();
  server.stop();
  EXPECT_LT(secondsSince(stopAt), 1.0);  // stop() itself is prompt
  waiter.join();
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, ErrorCode::kPeerLost);
  EXPECT_LT(std::chrono::duration<double>(failedAt - stopAt).count(), 1.0);
  EXPECT_FALSE(server.running());
  server.stop();  // idempotent
  // Later calls on the dead connection fail fast rather than hang.
  EXPECT_THROW(c.set("k", "v"), Error);
}

}  // namespace
}  // namespace braid
