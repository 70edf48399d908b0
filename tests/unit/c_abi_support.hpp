// What the C ABI tests share: running bodies on forked ranks that create their communicators through braid.h, and
// collecting each rank's failures as text.
#pragma once

#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bootstrap/unique_id.hpp"
#include "braid/braid.h"
#include "support/rank_runner.hpp"

namespace braid::testing::capi {

// Stops the rendezvous server braid_get_unique_id started in this process.
inline void releaseId(const braid_unique_id_t& id) {
  braid::bootstrap::UniqueIdBytes bytes;
  std::memcpy(bytes.bytes.data(), id.bytes, sizeof id.bytes);
  braid::bootstrap::releaseRootServer(bytes);
}

inline std::string describeFailure(braid_result_t result) {
  return std::string(braid_result_string(result)) + ": " + braid_last_error();
}

// ---- Failures collected inside a rank: each check appends a line, the rank reports them all at the end. ----

inline void expectOk(std::string& failures, braid_result_t result, const char* call) {
  if (result != BRAID_SUCCESS) failures += std::string(call) + " failed: " + describeFailure(result) + "\n";
}

template <typename T, typename Expected>
inline void expectAll(std::string& failures, const char* what, const std::vector<T>& got, Expected expected) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    const T want = expected(i);
    if (!(got[i] == want)) {
      failures += std::string(what) + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                  ", expected " + std::to_string(want) + "\n";
      return;
    }
  }
}

// A child's report to its parent: best effort, the exit status tells failure apart anyway.
inline void report(int fd, const std::string& failures) {
  std::size_t done = 0;
  while (done < failures.size()) {
    const ssize_t n = ::write(fd, failures.data() + done, failures.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

using RankBody = std::function<void(braid_comm_t comm, int rank, int size, std::string& failures)>;

// Forks `ranks` children; each creates its communicator from one id made here with braid_get_unique_id, runs
// `body`, and reports its failures through a pipe. Returns one message per rank, empty when that rank passed.
inline std::vector<std::string> runCRanks(int ranks, const RankBody& body, double timeoutSeconds = 120) {
  braid_unique_id_t id;
  if (braid_get_unique_id(&id) != BRAID_SUCCESS) return {std::string("braid_get_unique_id: ") + braid_last_error()};
  auto results = braid::testing::forkRanks(
      ranks,
      [&](int r) {
        ::setenv("BRAID_TIMEOUT", "60", /*overwrite=*/0);  // a hang fails fast
        std::string failures;
        braid_comm_t comm = nullptr;
        const braid_result_t result = braid_comm_init(&comm, &id, r, ranks);
        if (result != BRAID_SUCCESS) return "braid_comm_init: " + describeFailure(result);
        try {
          body(comm, r, ranks, failures);
        } catch (const std::exception& e) {
          failures += std::string("exception in the test body: ") + e.what();
        }
        expectOk(failures, braid_comm_destroy(comm), "braid_comm_destroy");
        return failures;
      },
      timeoutSeconds);
  releaseId(id);
  return results;
}

}  // namespace braid::testing::capi
