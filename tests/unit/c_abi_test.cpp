// The C ABI (braid.h): results and messages of the error paths and a communicator of one rank in this process
// (c_abi_ranks_test.cpp runs the calls across processes).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

// A handle's stream applies to its later calls; the null stream (the default) leaves host calls untouched.
TEST_F(CAbiSingle, SetStreamTakesTheNullStreamAndHostCallsStillRun) {
  ASSERT_EQ(braid_comm_set_stream(comm_, nullptr), BRAID_SUCCESS) << braid_last_error();
  int value = 7;
  ASSERT_EQ(braid_allreduce(&value, &value, 1, BRAID_INT32, BRAID_SUM, comm_), BRAID_SUCCESS) << braid_last_error();
  EXPECT_EQ(value, 7);
}
