// The C ABI (braid.h): results and messages of the error paths, a communicator of one rank in this process, and
// every kind of call across three forked processes that create their communicators from a unique id made here.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/unique_id.hpp"
#include "braid/braid.h"
#include "support/free_port.hpp"
#include "support/rank_runner.hpp"
#include "unit/c_abi_support.hpp"

extern "C" int braid_c_header_smoke(braid_unique_id_t* id);

namespace {

using namespace braid::testing::capi;

// A communicator of one rank, made without forking; destroyed (and its id released) at the end of the test.
class CAbiSingle : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(braid_get_unique_id(&id_), BRAID_SUCCESS) << braid_last_error();
    const braid_result_t result = braid_comm_init(&comm_, &id_, 0, 1);
    ASSERT_EQ(result, BRAID_SUCCESS) << describeFailure(result);
    ASSERT_NE(comm_, nullptr);
  }
  void TearDown() override {
    EXPECT_EQ(braid_comm_destroy(comm_), BRAID_SUCCESS);
    releaseId(id_);
  }

  braid_unique_id_t id_{};
  braid_comm_t comm_ = nullptr;
};

// Runs `body` in a forked child (for tests that change the environment) and returns what it reported.
std::string inChild(const std::function<void(std::string& failures)>& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::setenv("BRAID_TIMEOUT", "30", /*overwrite=*/1);
    std::string failures;
    body(failures);
    report(fds[1], failures);
    ::_exit(failures.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (out.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) out = "child failed without a message";
  return out;
}

}  // namespace

// ---- Error paths and single-rank calls ----

TEST(CAbi, ResultStrings) {
  EXPECT_STREQ(braid_result_string(BRAID_SUCCESS), "success");
  EXPECT_STREQ(braid_result_string(BRAID_ERR_INVALID_ARGUMENT), "invalid argument");
  EXPECT_STREQ(braid_result_string(BRAID_ERR_PEER_LOST), "peer lost");
  EXPECT_STREQ(braid_result_string(BRAID_ERR_INTERNAL), "internal error");
  EXPECT_STREQ(braid_result_string(static_cast<braid_result_t>(99)), "unknown result");
}

TEST(CAbi, NullCommIsInvalidArgumentNamingTheCall) {
  int value = 1;
  EXPECT_EQ(braid_allreduce(&value, &value, 1, BRAID_INT32, BRAID_SUM, nullptr), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "comm is NULL"), nullptr) << braid_last_error();
  EXPECT_NE(std::strstr(braid_last_error(), "braid_allreduce"), nullptr) << braid_last_error();
  EXPECT_EQ(braid_barrier(nullptr), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "braid_barrier"), nullptr) << braid_last_error();
  int rank = -1;
  EXPECT_EQ(braid_comm_rank(nullptr, &rank), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(braid_group(nullptr, nullptr, 0), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(braid_group_from(nullptr, nullptr, 0, nullptr), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "braid_group_from"), nullptr) << braid_last_error();
  EXPECT_EQ(braid_comm_set_stream(nullptr, nullptr), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "braid_comm_set_stream"), nullptr) << braid_last_error();
  EXPECT_EQ(braid_comm_destroy(nullptr), BRAID_SUCCESS);
}

TEST(CAbi, LastErrorIsPerThreadAndEmptyBeforeAnyFailure) {
  std::string seenByFreshThread = "unset";
  std::thread([&] { seenByFreshThread = braid_last_error(); }).join();
  EXPECT_EQ(seenByFreshThread, "");
  EXPECT_EQ(braid_barrier(nullptr), BRAID_ERR_INVALID_ARGUMENT);
  std::thread([&] { seenByFreshThread = braid_last_error(); }).join();
  EXPECT_EQ(seenByFreshThread, "");
  EXPECT_NE(std::strstr(braid_last_error(), "comm is NULL"), nullptr);
}

TEST(CAbi, InitRefusesBadArgumentsAndClearsTheHandle) {
  braid_unique_id_t id{};
  braid_comm_t comm = reinterpret_cast<braid_comm_t>(&id);  // garbage that must be overwritten with NULL
  EXPECT_EQ(braid_comm_init(nullptr, &id, 0, 1), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(braid_comm_init(&comm, nullptr, 0, 1), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(std::strstr(braid_last_error(), "id is NULL"), nullptr) << braid_last_error();
  comm = reinterpret_cast<braid_comm_t>(&id);
  EXPECT_EQ(braid_comm_init(&comm, &id, 3, 2), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(std::strstr(braid_last_error(), "rank 3"), nullptr) << braid_last_error();
  // All zeros is no id that braid_get_unique_id makes.
  EXPECT_EQ(braid_comm_init(&comm, &id, 0, 1), BRAID_ERR_INVALID_ARGUMENT) << braid_last_error();
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(braid_get_unique_id(nullptr), BRAID_ERR_INVALID_ARGUMENT);
}

TEST(CAbi, ADestroyedHandleIsRefusedByNameNotRead) {
  braid_unique_id_t id{};
  ASSERT_EQ(braid_get_unique_id(&id), BRAID_SUCCESS) << braid_last_error();
  braid_comm_t comm = nullptr;
  ASSERT_EQ(braid_comm_init(&comm, &id, 0, 1), BRAID_SUCCESS) << braid_last_error();
  ASSERT_EQ(braid_comm_destroy(comm), BRAID_SUCCESS) << braid_last_error();
  releaseId(id);

  // Each use of the stale handle fails by name (under the sanitizers, a read of freed memory would fail the run).
  int value = 1;
  EXPECT_EQ(braid_allreduce(&value, &value, 1, BRAID_INT32, BRAID_SUM, comm), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "destroyed"), nullptr) << braid_last_error();
  EXPECT_NE(std::strstr(braid_last_error(), "braid_allreduce"), nullptr) << braid_last_error();
  int rank = -1;
  EXPECT_EQ(braid_comm_rank(comm, &rank), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rank, -1);
  EXPECT_EQ(braid_comm_abort(comm), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(braid_comm_destroy(comm), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "braid_comm_destroy"), nullptr) << braid_last_error();
  EXPECT_NE(std::strstr(braid_last_error(), "destroyed"), nullptr) << braid_last_error();
}

TEST(CAbi, InitFromEnvironment) {
  // Without the launcher's variables: refused, naming the variable.
  EXPECT_EQ(inChild([](std::string& failures) {
              ::unsetenv("BRAID_RANK");
              ::unsetenv("BRAID_WORLD_SIZE");
              ::unsetenv("BRAID_ROOT_ADDR");
              braid_comm_t comm = nullptr;
              const braid_result_t result = braid_comm_init_env(&comm);
              if (result != BRAID_ERR_INVALID_ARGUMENT || comm != nullptr ||
                  std::strstr(braid_last_error(), "BRAID_WORLD_SIZE") == nullptr) {
                failures = "without BRAID_WORLD_SIZE: " + describeFailure(result);
              }
            }),
            "");
  // A job of one rank that listens on a free loopback port.
  const int port = braid::testing::freePort();
  ASSERT_GT(port, 0);
  EXPECT_EQ(inChild([port](std::string& failures) {
              ::setenv("BRAID_RANK", "0", 1);
              ::setenv("BRAID_WORLD_SIZE", "1", 1);
              ::setenv("BRAID_ROOT_ADDR", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
              braid_comm_t comm = nullptr;
              const braid_result_t result = braid_comm_init_env(&comm);
              if (result != BRAID_SUCCESS) {
                failures = "braid_comm_init_env: " + describeFailure(result);
                return;
              }
              int size = 0;
              expectOk(failures, braid_comm_size(comm, &size), "braid_comm_size");
              if (size != 1) failures += "size " + std::to_string(size) + ", expected 1\n";
              expectOk(failures, braid_barrier(comm), "braid_barrier");
              expectOk(failures, braid_comm_destroy(comm), "braid_comm_destroy");
            }),
            "");
}

TEST(CAbi, CHeaderCompilesAsC99AndItsCallsRun) {
  braid_unique_id_t id{};
  EXPECT_EQ(braid_c_header_smoke(&id), 0) << "failed step; last error: " << braid_last_error();
  releaseId(id);
}

TEST_F(CAbiSingle, RankAndSize) {
  int rank = -1;
  int size = -1;
  ASSERT_EQ(braid_comm_rank(comm_, &rank), BRAID_SUCCESS);
  ASSERT_EQ(braid_comm_size(comm_, &size), BRAID_SUCCESS);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(size, 1);
  EXPECT_EQ(braid_comm_rank(comm_, nullptr), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "rank is NULL"), nullptr) << braid_last_error();
}

TEST_F(CAbiSingle, EveryCollectiveOnOneRank) {
  std::string failures;
  std::vector<std::int32_t> in(100), out(100, -1);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::int32_t>(i) - 50;
  const auto same = [&](std::size_t i) { return in[i]; };
  const std::size_t n = in.size();

  expectOk(failures, braid_allreduce(in.data(), out.data(), n, BRAID_INT32, BRAID_SUM, comm_), "allreduce");
  expectAll(failures, "allreduce", out, same);
  std::vector<double> d = {1.0, -2.5, 3.25};
  expectOk(failures, braid_allreduce_premul(d.data(), d.data(), d.size(), BRAID_FLOAT64, 2.0, comm_), "premul");
  expectAll(failures, "premul", d, [](std::size_t i) { return std::vector<double>{2.0, -5.0, 6.5}[i]; });
  std::fill(out.begin(), out.end(), -1);
  expectOk(failures, braid_reduce(in.data(), out.data(), n, BRAID_INT32, BRAID_MAX, 0, comm_), "reduce");
  expectAll(failures, "reduce", out, same);
  std::fill(out.begin(), out.end(), -1);
  expectOk(failures, braid_reduce_scatter(in.data(), out.data(), n, BRAID_INT32, BRAID_MIN, comm_), "reduce_scatter");
  expectAll(failures, "reduce_scatter", out, same);
  std::fill(out.begin(), out.end(), -1);
  expectOk(failures, braid_allgather(in.data(), out.data(), n, BRAID_INT32, comm_), "allgather");
  expectAll(failures, "allgather", out, same);
  std::fill(out.begin(), out.end(), -1);
  const std::size_t counts[1] = {n};
  const std::size_t displs[1] = {0};
  expectOk(failures, braid_allgatherv(in.data(), n, out.data(), counts, displs, BRAID_INT32, comm_), "allgatherv");
  expectAll(failures, "allgatherv", out, same);
  std::fill(out.begin(), out.end(), -1);
  expectOk(failures, braid_alltoall(in.data(), out.data(), n, BRAID_INT32, comm_), "alltoall");
  expectAll(failures, "alltoall", out, same);
  std::fill(out.begin(), out.end(), -1);
  expectOk(failures, braid_alltoallv(in.data(), counts, displs, out.data(), counts, displs, BRAID_INT32, comm_),
           "alltoallv");
  expectAll(failures, "alltoallv", out, same);
  std::fill(out.begin(), out.end(), -1);
  expectOk(failures, braid_gather(in.data(), out.data(), n, BRAID_INT32, 0, comm_), "gather");
  expectAll(failures, "gather", out, same);
  std::fill(out.begin(), out.end(), -1);
  expectOk(failures, braid_scatter(in.data(), out.data(), n, BRAID_INT32, 0, comm_), "scatter");
  expectAll(failures, "scatter", out, same);
  expectOk(failures, braid_broadcast(in.data(), n, BRAID_INT32, 0, comm_), "broadcast");
  expectOk(failures, braid_barrier(comm_), "barrier");
  expectOk(failures, braid_group(comm_, nullptr, 0), "empty group");
  EXPECT_EQ(failures, "");
}

TEST_F(CAbiSingle, BadDatatypeAndOpValuesAreRefusedByNumber) {
  float x = 1.0f;
  EXPECT_EQ(braid_allreduce(&x, &x, 1, static_cast<braid_datatype_t>(42), BRAID_SUM, comm_),
            BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "datatype 42"), nullptr) << braid_last_error();
  // 265 would wrap to float32 (9) in the 8-bit C++ enum: it must be refused, not reinterpreted.
  EXPECT_EQ(braid_broadcast(&x, 1, static_cast<braid_datatype_t>(265), 0, comm_), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "datatype 265"), nullptr) << braid_last_error();
  EXPECT_EQ(braid_send(&x, 1, static_cast<braid_datatype_t>(-1), 0, 0, comm_), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(braid_allreduce(&x, &x, 1, BRAID_FLOAT32, static_cast<braid_redop_t>(9), comm_),
            BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "reduction op 9"), nullptr) << braid_last_error();
  braid_p2p_op_t ops[2] = {{1, 0, &x, 1, BRAID_FLOAT32, 0}, {0, 0, &x, 1, static_cast<braid_datatype_t>(42), 0}};
  EXPECT_EQ(braid_group(comm_, ops, 2), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "ops[1]"), nullptr) << braid_last_error();
  EXPECT_EQ(braid_group(comm_, nullptr, 1), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(braid_group(comm_, ops, -1), BRAID_ERR_INVALID_ARGUMENT);
  // The C++ layer's own checks come through with their code: a root out of range.
  EXPECT_EQ(braid_broadcast(&x, 1, BRAID_FLOAT32, 5, comm_), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "5"), nullptr) << braid_last_error();
  // NULL count arrays.
  EXPECT_EQ(braid_allgatherv(&x, 1, &x, nullptr, nullptr, BRAID_FLOAT32, comm_), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "recv_counts is NULL"), nullptr) << braid_last_error();
  // The communicator still works after refused calls.
  EXPECT_EQ(braid_allreduce(&x, &x, 1, BRAID_FLOAT32, BRAID_SUM, comm_), BRAID_SUCCESS) << braid_last_error();
}

// The float8 types go through the C API like the others: reduced in float32 and rounded once, bitwise ops refused,
// the first value past them refused by number.
TEST_F(CAbiSingle, Float8Types) {
  EXPECT_EQ(BRAID_FLOAT8_E4M3, 11);
  EXPECT_EQ(BRAID_FLOAT8_E5M2, 12);
  EXPECT_EQ(BRAID_NUM_DATATYPES, 13);
  std::uint8_t e4m3[3] = {0x38, 0xbc, 0x7e};  // 1.0, -1.5, 448 (the largest)
  EXPECT_EQ(braid_allreduce_premul(e4m3, e4m3, 3, BRAID_FLOAT8_E4M3, 2.0, comm_), BRAID_SUCCESS) << braid_last_error();
  EXPECT_EQ(e4m3[0], 0x40);             // 2.0
  EXPECT_EQ(e4m3[1], 0xc4);             // -3.0
  EXPECT_EQ(e4m3[2], 0x7e);             // 896 saturates to 448
  std::uint8_t e5m2[2] = {0x3c, 0x7c};  // 1.0, +inf
  std::uint8_t out[2] = {};
  EXPECT_EQ(braid_allreduce(e5m2, out, 2, BRAID_FLOAT8_E5M2, BRAID_MAX, comm_), BRAID_SUCCESS) << braid_last_error();
  EXPECT_EQ(out[0], 0x3c);
  EXPECT_EQ(braid_broadcast(e5m2, 2, BRAID_FLOAT8_E5M2, 0, comm_), BRAID_SUCCESS);  // moved, not rounded
  EXPECT_EQ(e5m2[1], 0x7c);
  EXPECT_EQ(braid_allreduce(e5m2, e5m2, 2, BRAID_FLOAT8_E5M2, BRAID_BXOR, comm_), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "float8_e5m2"), nullptr) << braid_last_error();
  EXPECT_EQ(braid_allreduce(e5m2, e5m2, 2, static_cast<braid_datatype_t>(13), BRAID_SUM, comm_),
            BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "datatype 13"), nullptr) << braid_last_error();
}

TEST_F(CAbiSingle, PremulSumNeedsTheScaledCall) {
  double x = 3.0;
  EXPECT_EQ(braid_allreduce(&x, &x, 1, BRAID_FLOAT64, BRAID_PREMUL_SUM, comm_), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(braid_last_error(), "braid_allreduce_premul"), nullptr) << braid_last_error();
  EXPECT_EQ(braid_reduce_scatter(&x, &x, 1, BRAID_FLOAT64, BRAID_PREMUL_SUM, comm_), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(braid_reduce(&x, &x, 1, BRAID_FLOAT64, BRAID_PREMUL_SUM, 0, comm_), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(x, 3.0);
  // Integer types take integral scales only; the C++ layer's refusal arrives as a code and a message.
  std::int32_t i = 2;
  EXPECT_EQ(braid_allreduce_premul(&i, &i, 1, BRAID_INT32, 0.5, comm_), BRAID_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(braid_allreduce_premul(&i, &i, 1, BRAID_INT32, 3.0, comm_), BRAID_SUCCESS) << braid_last_error();
  EXPECT_EQ(i, 6);
}

// ---- Three processes ----

// Every collective and point-to-point call with inputs whose results are exact, checked on every rank.
TEST(CAbi, ThreeProcessesEveryCall) {
  const auto results = runCRanks(3, [](braid_comm_t comm, int rank, int size, std::string& failures) {
    const auto r = static_cast<std::size_t>(rank);
    const auto n = static_cast<std::size_t>(size);
    int queried = -1;
    expectOk(failures, braid_comm_rank(comm, &queried), "braid_comm_rank");
    if (queried != rank) failures += "braid_comm_rank gave " + std::to_string(queried) + "\n";

    // allreduce, large enough to take several chunks: sum of (q+1)*(i%1000) over ranks q.
    {
      const std::size_t count = 300001;
      std::vector<std::int32_t> in(count), out(count, -1);
      for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<std::int32_t>((r + 1) * (i % 1000));
      expectOk(failures, braid_allreduce(in.data(), out.data(), count, BRAID_INT32, BRAID_SUM, comm), "allreduce");
      expectAll(failures, "allreduce sum int32", out, [](std::size_t i) { return std::int32_t(6 * (i % 1000)); });
    }
    // allreduce max in place.
    {
      std::vector<float> buf(1000);
      for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>((i * 7 + r * 13) % 101);
      expectOk(failures, braid_allreduce(buf.data(), buf.data(), buf.size(), BRAID_FLOAT32, BRAID_MAX, comm),
               "allreduce max");
      expectAll(failures, "allreduce max float32 in place", buf, [n](std::size_t i) {
        float best = 0;
        for (std::size_t q = 0; q < n; ++q) best = std::max(best, static_cast<float>((i * 7 + q * 13) % 101));
        return best;
      });
    }
    // premul: every rank scales by its own factor rank+1.
    {
      std::vector<double> in(777), out(777, -1);
      for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>(i % 17) + static_cast<double>(r);
      expectOk(failures,
               braid_allreduce_premul(in.data(), out.data(), in.size(), BRAID_FLOAT64, double(rank + 1), comm),
               "allreduce_premul");
      expectAll(failures, "allreduce_premul float64", out, [n](std::size_t i) {
        double sum = 0;
        for (std::size_t q = 0; q < n; ++q) sum += double(q + 1) * (double(i % 17) + double(q));
        return sum;
      });
    }
    // broadcast from rank 1.
    {
      std::vector<std::int64_t> buf(5000, -1);
      if (rank == 1) {
        for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<std::int64_t>(i * 3) - 7;
      }
      expectOk(failures, braid_broadcast(buf.data(), buf.size(), BRAID_INT64, 1, comm), "broadcast");
      expectAll(failures, "broadcast int64 root 1", buf, [](std::size_t i) { return std::int64_t(i * 3) - 7; });
    }
    // reduce (prod) to rank 2.
    {
      std::vector<std::int32_t> in(64), out(64, -1);
      for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::int32_t>(i % 3 + 1 + r);
      expectOk(failures, braid_reduce(in.data(), out.data(), in.size(), BRAID_INT32, BRAID_PROD, 2, comm), "reduce");
      if (rank == 2) {
        expectAll(failures, "reduce prod int32 root 2", out, [n](std::size_t i) {
          std::int32_t p = 1;
          for (std::size_t q = 0; q < n; ++q) p *= static_cast<std::int32_t>(i % 3 + 1 + q);
          return p;
        });
      }
    }
    // reduce_scatter: block b of rank q holds q*100 + b*5 + k.
    {
      const std::size_t block = 5;
      std::vector<float> in(block * n), out(block, -1);
      for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(r * 100 + i);
      expectOk(failures, braid_reduce_scatter(in.data(), out.data(), block, BRAID_FLOAT32, BRAID_SUM, comm),
               "reduce_scatter");
      expectAll(failures, "reduce_scatter sum float32", out, [&](std::size_t k) {
        float sum = 0;
        for (std::size_t q = 0; q < n; ++q) sum += static_cast<float>(q * 100 + r * block + k);
        return sum;
      });
    }
    // allgather.
    {
      const std::size_t count = 7;
      std::vector<std::uint8_t> in(count), out(count * n, 0);
      for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<std::uint8_t>(r * 10 + i);
      expectOk(failures, braid_allgather(in.data(), out.data(), count, BRAID_UINT8, comm), "allgather");
      expectAll(failures, "allgather uint8", out,
                [&](std::size_t i) { return std::uint8_t((i / count) * 10 + i % count); });
    }
    // allgatherv: rank q sends q+1 elements; the blocks land in reverse rank order with a gap of one element.
    {
      std::vector<std::size_t> counts(n), displs(n);
      std::size_t at = 0;
      for (std::size_t q = n; q-- > 0;) {
        counts[q] = q + 1;
        displs[q] = at;
        at += counts[q] + 1;
      }
      std::vector<std::int32_t> in(r + 1), out(at, -1), want(at, -1);
      for (std::size_t i = 0; i <= r; ++i) in[i] = static_cast<std::int32_t>(r * 1000 + i);
      for (std::size_t q = 0; q < n; ++q) {
        for (std::size_t i = 0; i < counts[q]; ++i) want[displs[q] + i] = static_cast<std::int32_t>(q * 1000 + i);
      }
      expectOk(failures,
               braid_allgatherv(in.data(), in.size(), out.data(), counts.data(), displs.data(), BRAID_INT32, comm),
               "allgatherv");
      expectAll(failures, "allgatherv int32", out, [&](std::size_t i) { return want[i]; });
    }
    // alltoall: block j element k of rank q is q*100 + j*10 + k.
    {
      const std::size_t count = 4;
      std::vector<std::int32_t> in(count * n), out(count * n, -1);
      for (std::size_t i = 0; i < in.size(); ++i)
        in[i] = static_cast<std::int32_t>(r * 100 + i / count * 10 + i % count);
      expectOk(failures, braid_alltoall(in.data(), out.data(), count, BRAID_INT32, comm), "alltoall");
      expectAll(failures, "alltoall int32", out,
                [&](std::size_t i) { return std::int32_t(i / count * 100 + r * 10 + i % count); });
    }
    // alltoallv: rank q sends q+j+1 elements to rank j, packed; received blocks are placed with a gap of 2.
    {
      std::vector<std::size_t> sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n);
      std::size_t sendAt = 0;
      std::size_t recvAt = 0;
      for (std::size_t j = 0; j < n; ++j) {
        sendCounts[j] = r + j + 1;
        sendDispls[j] = sendAt;
        sendAt += sendCounts[j];
        recvCounts[j] = j + r + 1;
        recvDispls[j] = recvAt;
        recvAt += recvCounts[j] + 2;
      }
      std::vector<std::int32_t> in(sendAt), out(recvAt, -1), want(recvAt, -1);
      for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t k = 0; k < sendCounts[j]; ++k) {
          in[sendDispls[j] + k] = static_cast<std::int32_t>(r * 1000 + j * 100 + k);
        }
        for (std::size_t k = 0; k < recvCounts[j]; ++k) {
          want[recvDispls[j] + k] = static_cast<std::int32_t>(j * 1000 + r * 100 + k);
        }
      }
      expectOk(failures,
               braid_alltoallv(in.data(), sendCounts.data(), sendDispls.data(), out.data(), recvCounts.data(),
                               recvDispls.data(), BRAID_INT32, comm),
               "alltoallv");
      expectAll(failures, "alltoallv int32", out, [&](std::size_t i) { return want[i]; });
    }
    // gather to rank 0, scatter from rank 2.
    {
      const std::size_t count = 3;
      std::vector<std::int32_t> in(count), out(count * n, -1);
      for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<std::int32_t>(r * 10 + i);
      expectOk(failures, braid_gather(in.data(), out.data(), count, BRAID_INT32, 0, comm), "gather");
      if (rank == 0) {
        expectAll(failures, "gather int32 root 0", out,
                  [&](std::size_t i) { return std::int32_t(i / count * 10 + i % count); });
      }
      std::vector<std::int32_t> blocks(count * n), mine(count, -1);
      for (std::size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<std::int32_t>(i + 500);
      expectOk(failures, braid_scatter(blocks.data(), mine.data(), count, BRAID_INT32, 2, comm), "scatter");
      expectAll(failures, "scatter int32 root 2", mine,
                [&](std::size_t k) { return std::int32_t(r * count + k + 500); });
    }
    // send/recv: rank 0 sends two messages with one tag to rank 2 (they arrive in order), rank 1 sends to rank 0,
    // which receives from any source.
    {
      std::vector<std::int32_t> first(100), second(100);
      for (std::size_t i = 0; i < first.size(); ++i) {
        first[i] = static_cast<std::int32_t>(i);
        second[i] = static_cast<std::int32_t>(1000 + i);
      }
      if (rank == 0) {
        expectOk(failures, braid_send(first.data(), first.size(), BRAID_INT32, 2, 5, comm), "send first");
        expectOk(failures, braid_send(second.data(), second.size(), BRAID_INT32, 2, 5, comm), "send second");
        // From any source: only rank 1 sends tag 9, and the call says so.
        std::vector<double> got(10, -1);
        int source = -1;
        expectOk(failures, braid_recv_from(got.data(), got.size(), BRAID_FLOAT64, BRAID_ANY_SOURCE, 9, &source, comm),
                 "recv from any source");
        expectAll(failures, "recv float64 from rank 1 tag 9", got, [](std::size_t i) { return 0.5 * double(i); });
        if (source != 1) failures += "braid_recv_from named rank " + std::to_string(source) + ", not 1; ";
      } else if (rank == 1) {
        std::vector<double> out(10);
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = 0.5 * double(i);
        expectOk(failures, braid_send(out.data(), out.size(), BRAID_FLOAT64, 0, 9, comm), "send to 0");
      } else {
        std::vector<std::int32_t> a(100, -1), b(100, -1);
        expectOk(failures, braid_recv(a.data(), a.size(), BRAID_INT32, 0, 5, comm), "recv first");
        expectOk(failures, braid_recv(b.data(), b.size(), BRAID_INT32, 0, 5, comm), "recv second");
        expectAll(failures, "first message from rank 0", a, [&](std::size_t i) { return first[i]; });
        expectAll(failures, "second message from rank 0", b, [&](std::size_t i) { return second[i]; });
      }
    }
    // group: every rank sends to both neighbours and receives from both, sends listed first; the messages exceed
    // the transport's buffering, so completing them one by one in list order would deadlock.
    {
      const std::size_t count = 300000;
      const int next = (rank + 1) % size;
      const int prev = (rank + size - 1) % size;
      std::vector<float> toNext(count), toPrev(count), fromPrev(count, -1), fromNext(count, -1);
      for (std::size_t i = 0; i < count; ++i) {
        toNext[i] = static_cast<float>(r * 1000000 + i % 4096);
        toPrev[i] = -static_cast<float>(r * 1000000 + i % 4096);
      }
      const braid_p2p_op_t ops[4] = {
          {0, next, toNext.data(), count, BRAID_FLOAT32, 1},
          {0, prev, toPrev.data(), count, BRAID_FLOAT32, 2},
          {1, prev, fromPrev.data(), count, BRAID_FLOAT32, 1},
          {1, next, fromNext.data(), count, BRAID_FLOAT32, 2},
      };
      expectOk(failures, braid_group(comm, ops, 4), "group");
      const auto p = static_cast<std::size_t>(prev);
      const auto q = static_cast<std::size_t>(next);
      expectAll(failures, "group from prev", fromPrev,
                [p](std::size_t i) { return static_cast<float>(p * 1000000 + i % 4096); });
      expectAll(failures, "group from next", fromNext,
                [q](std::size_t i) { return -static_cast<float>(q * 1000000 + i % 4096); });
    }
    // group with sources: ranks 1 and 2 each send rank 0 one message of tag 4, which rank 0 takes with two receives
    // from any source in one group beside a send to rank 1; each receive names the rank whose message it holds.
    {
      std::vector<std::int32_t> mine(50, rank * 7);
      if (rank == 0) {
        std::vector<std::int32_t> a(50, -1), b(50, -1), back(50, -1);
        const braid_p2p_op_t ops[3] = {
            {1, BRAID_ANY_SOURCE, a.data(), a.size(), BRAID_INT32, 4},
            {0, 1, mine.data(), mine.size(), BRAID_INT32, 6},
            {1, BRAID_ANY_SOURCE, b.data(), b.size(), BRAID_INT32, 4},
        };
        int sources[3] = {-7, -7, -7};
        expectOk(failures, braid_group_from(comm, ops, 3, sources), "group_from");
        if (sources[1] != 1) failures += "group_from's send entry says " + std::to_string(sources[1]) + "; ";
        if (sources[0] == sources[2] || (sources[0] != 1 && sources[0] != 2) || (sources[2] != 1 && sources[2] != 2)) {
          failures += "group_from named ranks " + std::to_string(sources[0]) + " and " + std::to_string(sources[2]) +
                      ", not 1 and 2; ";
        } else {
          const std::int32_t fromA = sources[0] * 7, fromB = sources[2] * 7;
          expectAll(failures, "group_from's first receive", a, [&](std::size_t) { return fromA; });
          expectAll(failures, "group_from's second receive", b, [&](std::size_t) { return fromB; });
        }
      } else {
        expectOk(failures, braid_send(mine.data(), mine.size(), BRAID_INT32, 0, 4, comm), "send to 0 for group_from");
        if (rank == 1) {
          std::vector<std::int32_t> got(50, -1);
          expectOk(failures, braid_recv(got.data(), got.size(), BRAID_INT32, 0, 6, comm), "recv from group_from");
          expectAll(failures, "the group_from's send", got, [](std::size_t) { return std::int32_t{0}; });
        }
      }
    }
    expectOk(failures, braid_barrier(comm), "barrier");
  });
  EXPECT_EQ(braid::testing::failures(results), "");
}

// A rank that calls with another type than its peers gets BRAID_ERR_MISMATCH, as do they, with a message.
TEST(CAbi, ThreeProcessesMismatchIsReported) {
  const auto results = runCRanks(3, [](braid_comm_t comm, int rank, int, std::string& failures) {
    std::vector<std::int32_t> buf(16, 1);
    const braid_datatype_t type = rank == 1 ? BRAID_UINT32 : BRAID_INT32;
    const braid_result_t result = braid_allreduce(buf.data(), buf.data(), buf.size(), type, BRAID_SUM, comm);
    if (result != BRAID_ERR_MISMATCH) {
      failures += std::string("expected a mismatch, got ") + describeFailure(result);
    } else if (std::strlen(braid_last_error()) == 0) {
      failures += "mismatch without a message";
    }
  });
  EXPECT_EQ(braid::testing::failures(results), "");
}

// A datatype the C layer refuses on one rank still meets the peers, so they fail at once with a mismatch instead of
// waiting out BRAID_TIMEOUT (60 s in these children; the test allows 30); the communicator then works on.
TEST(CAbi, ThreeProcessesRefusalOnOneRankFailsThePeersFast) {
  const auto results = runCRanks(
      3,
      [](braid_comm_t comm, int rank, int, std::string& failures) {
        std::vector<std::int32_t> buf(16, 1);
        const braid_datatype_t type = rank == 1 ? static_cast<braid_datatype_t>(42) : BRAID_INT32;
        const braid_result_t result = braid_allreduce(buf.data(), buf.data(), buf.size(), type, BRAID_SUM, comm);
        const char* message = braid_last_error();
        if (rank == 1) {
          if (result != BRAID_ERR_INVALID_ARGUMENT || std::strstr(message, "datatype 42") == nullptr ||
              std::strstr(message, "braid_allreduce") == nullptr) {
            failures += "the refusing rank got " + describeFailure(result) + "\n";
          }
        } else if (result != BRAID_ERR_MISMATCH) {
          failures += "a peer of the refusing rank got " + describeFailure(result) + "\n";
        }
        std::fill(buf.begin(), buf.end(), 2);
        expectOk(failures, braid_allreduce(buf.data(), buf.data(), buf.size(), BRAID_INT32, BRAID_SUM, comm),
                 "allreduce after the refusal");
        expectAll(failures, "allreduce after the refusal", buf, [](std::size_t) { return std::int32_t(6); });
      },
      30);
  EXPECT_EQ(braid::testing::failures(results), "");
}

// A handle's stream applies to its later calls; the null stream (the default) leaves host calls untouched.
TEST_F(CAbiSingle, SetStreamTakesTheNullStreamAndHostCallsStillRun) {
  ASSERT_EQ(braid_comm_set_stream(comm_, nullptr), BRAID_SUCCESS) << braid_last_error();
  int value = 7;
  ASSERT_EQ(braid_allreduce(&value, &value, 1, BRAID_INT32, BRAID_SUM, comm_), BRAID_SUCCESS) << braid_last_error();
  EXPECT_EQ(value, 7);
}
