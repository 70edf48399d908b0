// What the point-to-point tests share: a fixture that runs its ranks over each transport (threads over memory or
// TCP, processes over shared memory or TCP) and payloads that say who made them.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/rank_runner.hpp"

namespace braid::testing {

struct Transport {
  const char* name;
  bool processes;
  const char* transport;  // "" = threads over memory, processes over shared memory
};

inline void PrintTo(const Transport& t, std::ostream* os) { *os << t.name; }

inline auto everyP2pTransport() {
  return ::testing::Values(Transport{"threads", false, ""}, Transport{"threads_tcp", false, "tcp"},
                           Transport{"processes_shm", true, "shm"}, Transport{"processes_tcp", true, "tcp"});
}

class P2pOverTransports : public ::testing::TestWithParam<Transport> {
 protected:
  // A short timeout: a pattern that deadlocks fails by timing out, which should not take a minute.
  std::vector<std::string> run(int ranks, const Body& body, double timeoutSeconds = 20) {
    Settings s = testSettings();
    s.timeoutSeconds = timeoutSeconds;
    s.shmP2pBytes = 64 << 10;  // large messages do not fit the shared-memory ring: a send needs its receive
    if (*GetParam().transport) s.transport = GetParam().transport;
    return GetParam().processes ? runProcessesWith(ranks, s, body, 3 * timeoutSeconds) : runThreads(ranks, body, s);
  }
};

inline P2pOp op(P2pOp::Kind kind, int peer, std::vector<std::uint32_t>& buffer, int tag) {
  return P2pOp{kind, peer, buffer.data(), buffer.size(), DataType::kUint32, tag};
}

/// n consecutive values from seed's own start: a message's contents say which seed made it.
inline std::vector<std::uint32_t> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint32_t> v(n);
  std::iota(v.begin(), v.end(), seed * 1000003u);
  return v;
}

inline void expectPattern(const std::vector<std::uint32_t>& got, std::uint32_t seed, const std::string& what) {
  const std::vector<std::uint32_t> want = pattern(got.size(), seed);
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      throw std::runtime_error(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                               ", expected " + std::to_string(want[i]));
    }
  }
}

}  // namespace braid::testing
