// A stray client at a live job's listening port (issue 10): while the ranks loop collectives, something else
// connects to the rendezvous store's port (the one port a job keeps open; the mesh's ports close once the mesh is
// made, and TcpAuth.* covers them while it forms) and sends garbage, a store header claiming a huge value, half a
// header, or nothing at all and holds the connection. Pass: every rank completes every call, exactly, and the store
// drops the strays without taking the job down.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "bootstrap/tcp_store.hpp"
#include "braid/braid.hpp"
#include "support/free_port.hpp"
#include "support/rank_runner.hpp"
#include "transport/tcp/socket.hpp"

namespace braid::testing {
namespace {

std::vector<std::byte> bytes(const std::string& s) {
  std::vector<std::byte> out(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::byte>(s[i]);
  return out;
}

// What the strays send, one connection each, over and over until told to stop.
void strays(const tcp::Address& root, const std::atomic<bool>& stop, std::atomic<int>& made) {
  std::vector<tcp::Socket> held;  // the silent ones stay connected until the end
  for (int i = 0; !stop.load(); ++i) {
    try {
      tcp::Socket s = tcp::connectTo(root, Deadline::after(1));
      switch (i % 4) {
        case 0:
          s.sendAll(bytes(std::string(256, '\x5a')), Deadline::after(1));  // garbage
          break;
        case 1: {  // a well-formed store header claiming a 4 GiB value
          bootstrap::wire::Header h;
          h.op = bootstrap::wire::Op::kSet;
          h.keyBytes = 3;
          h.valueBytes = 0xffffffffu;
          const auto enc = bootstrap::wire::encodeHeader(h);
          s.sendAll(enc, Deadline::after(1));
          s.sendAll(bytes("key"), Deadline::after(1));
          break;
        }
        case 2:
          s.sendAll(bytes("BRST\x01"), Deadline::after(1));  // half a header, then silence
          held.push_back(std::move(s));
          break;
        default:
          if (held.size() < 16) held.push_back(std::move(s));  // connect and say nothing
          break;
      }
      ++made;
    } catch (const Error&) {
      // The server hung up on us or refused: what it should do. Keep going.
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

TEST(StrayClient, AtTheStorePortOfALiveJobChangesNothing) {
  const int size = 3;
  const std::string root = "127.0.0.1:" + std::to_string(freePort());
  std::atomic<bool> stop{false};
  std::atomic<int> made{0};
  // Started before the ranks: it retries until the store listens (the ranks are forked from this thread alone).
  std::thread stray(strays, tcp::Address::parse(root), std::cref(stop), std::ref(made));
  const auto results = forkRanks(
      size,
      [&](int rank) -> std::string {
        actAsLaunchedRank(rank, size, root, "tcp", 20);
        try {
          auto comm = Communicator::fromEnvironment();
          // A fixed number of calls (~2 s here), the same on every rank: the strays keep coming all along.
          constexpr int kCalls = 1500;
          std::vector<std::int64_t> v(4096);
          int calls = 0;
          while (calls < kCalls) {
            for (std::size_t j = 0; j < v.size(); ++j) v[j] = (rank + 1) * static_cast<std::int64_t>((calls + j) % 7);
            comm->allreduce(v.data(), v.data(), v.size(), DataType::kInt64, ReduceKind::kSum);
            for (std::size_t j = 0; j < v.size(); ++j) {
              const std::int64_t want = 6 * static_cast<std::int64_t>((calls + j) % 7);  // (1 + 2 + 3) * ...
              if (v[j] != want) return "call " + std::to_string(calls) + " element " + std::to_string(j) + " wrong";
            }
            ++calls;
            // The store, where the strays are, is also in use: later calls' hosts and splits go through it.
            if (calls % 50 == 0) comm->split(0, rank).reset();
          }
          return "";
        } catch (const std::exception& e) {
          return e.what();
        }
      },
      60);
  stop.store(true);
  stray.join();
  for (int r = 0; r < size; ++r) EXPECT_EQ(results[static_cast<std::size_t>(r)], "") << "rank " << r;
  EXPECT_GT(made.load(), 20) << "the strays hardly got through to the store";
}

}  // namespace
}  // namespace braid::testing
