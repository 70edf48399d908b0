// The C ABI across three forked processes: every call with exact results checked on every rank, and how a rank's
// mismatched or refused arguments reach its peers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "support/rank_runner.hpp"
#include "unit/c_abi_support.hpp"

using namespace braid::testing::capi;

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
