// Calls on device buffers run apart from their callers (CallOptions::streamAsync, what the NCCL library asks for):
// on a path whose host takes part, the call returns at once and its stream waits for the host part, which runs on
// the progress thread. The collectives' results this way are checked by the DeviceReductions, DeviceCollectives and
// DeviceStaging suites ("detached"); here: that the call does not wait for its peers, that the stream does, that
// failures (a dead peer, abort, a mismatch) release the stream and come back through asyncError() and the next
// call, and that many queued calls on two streams land in order. Every rank is on GPU 0, on the shared-GPU path.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpu/device_ranks.hpp"
#include "support/collective_cases.hpp"

namespace braid::gputest {
namespace {

using namespace std::chrono_literals;
using testing::require;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// `ranks` processes on GPU 0 whose device calls hold their host (BRAID_ALGO=shared) and ask to be detached.
std::vector<std::string> runDetached(int ranks, Settings settings,
                                     const std::function<void(Communicator&, cudaStream_t)>& body) {
  if (gpusSeenByAChild() < 1) return {};
  settings.algo = "shared";
  detachedCalls() = true;
  return testing::runProcessesWith(
      ranks, settings, [&](Communicator& comm) { onItsGpu(comm, 1, body); }, 120);
}

// Integers a sum of a few ranks keeps exact in float32.
std::vector<float> valuesOf(int rank, std::size_t n, int salt) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + static_cast<std::size_t>(salt)) % 101 + rank);
  return v;
}
std::vector<float> sumOf(int ranks, std::size_t n, int salt) {
  std::vector<float> sum(n, 0.0f);
  for (int r = 0; r < ranks; ++r) {
    const auto v = valuesOf(r, n, salt);
    for (std::size_t i = 0; i < n; ++i) sum[i] += v[i];
  }
  return sum;
}

void requireSum(Communicator& c, cudaStream_t s, const std::byte* result, std::size_t n, int salt,
                const std::string& what) {
  std::vector<float> got(n);
  download(got.data(), result, n * 4, s);
  const auto want = sumOf(c.size(), n, salt);
  requireSameBytes(got.data(), want.data(), n * 4, 4, what);
}

void allreduceOn(Communicator& c, cudaStream_t s, std::byte* buf, std::size_t n) {
  c.allreduce(buf, buf, n, DataType::kFloat32, ReduceKind::kSum, on(s));
}

// The first device call connects the device engine and is held; the later ones are detached.
void warmUp(Communicator& c, cudaStream_t s) {
  DeviceBytes buf(64 * 4);
  upload(buf.get(), valuesOf(c.rank(), 64, 1).data(), 64 * 4, s);
  allreduceOn(c, s, buf.get(), 64);
  requireSum(c, s, buf.get(), 64, 1, "the first call");
}

void requireAsyncError(Communicator& c, ErrorCode code, const std::string& what) {
  const auto error = c.asyncError();
  require(error.has_value() && error->code() == code,
          what + ": asyncError() says " + (error ? error->what() : std::string("nothing")));
}

TEST(DetachedCalls, ACallReturnsBeforeItsPeerJoinsAndTheStreamWaitsForIt) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runDetached(2, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    warmUp(c, s);
    const std::size_t n = 4099;
    DeviceBytes buf(n * 4);
    upload(buf.get(), valuesOf(c.rank(), n, 2).data(), n * 4, s);
    cuda::checkCuda(cudaStreamSynchronize(s), "cudaStreamSynchronize(upload)");
    if (c.rank() == 1) std::this_thread::sleep_for(2s);
    const auto start = Clock::now();
    allreduceOn(c, s, buf.get(), n);
    const double held = secondsSince(start);
    if (c.rank() == 0) {
      require(held < 1.0, "the call held its caller " + std::to_string(held) + " s while its peer was away");
      require(cudaStreamQuery(s) == cudaErrorNotReady, "the stream did not wait for the call's host part");
    }
    requireSum(c, s, buf.get(), n, 2, "the call its peer joined late");
    require(!c.asyncError().has_value(), "a call that succeeded left an async error");
  });
  EXPECT_EQ(testing::failures(results), "");
}

TEST(DetachedCalls, ManyQueuedCallsOnTwoStreamsLandInOrder) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runDetached(2, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    warmUp(c, s);
    cudaStream_t other = nullptr;
    cuda::checkCuda(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "cudaStreamCreate");
    // Growing sizes (the staging arena grows under queued calls), alternating streams, nothing waited for between.
    std::vector<std::unique_ptr<DeviceBytes>> bufs;
    std::vector<std::size_t> sizes;
    for (int i = 0; i < 24; ++i) {
      const std::size_t n = (std::size_t{1} << (i % 12 + 4)) + static_cast<std::size_t>(i);
      cudaStream_t on = i % 2 == 0 ? s : other;
      bufs.push_back(std::make_unique<DeviceBytes>(n * 4));
      sizes.push_back(n);
      upload(bufs.back()->get(), valuesOf(c.rank(), n, i).data(), n * 4, on);
      allreduceOn(c, on, bufs.back()->get(), n);
    }
    // One buffer reduced again and again on one stream: each call reads what the previous one wrote back.
    DeviceBytes chained(1000 * 4);
    upload(chained.get(), valuesOf(c.rank(), 1000, 3).data(), 1000 * 4, s);
    for (int k = 0; k < 5; ++k) allreduceOn(c, s, chained.get(), 1000);
    cuda::checkCuda(cudaStreamSynchronize(other), "cudaStreamSynchronize(other)");
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      requireSum(c, s, bufs[i]->get(), sizes[i], static_cast<int>(i), "queued call " + std::to_string(i));
    }
    std::vector<float> got(1000);
    download(got.data(), chained.get(), 1000 * 4, s);
    auto want = sumOf(c.size(), 1000, 3);
    for (float& x : want) x *= 16;  // the first call sums, the four after it double
    requireSameBytes(got.data(), want.data(), 1000 * 4, 4, "five chained calls");
    (void)cudaStreamDestroy(other);
  });
  EXPECT_EQ(testing::failures(results), "");
}

TEST(DetachedCalls, AbortLetsTheStreamGoOnAndTheFailureComesBackAsync) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runDetached(2, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    warmUp(c, s);
    if (c.rank() == 1) {
      std::this_thread::sleep_for(3s);  // never joins the call; its peer aborts meanwhile
      return;
    }
    DeviceBytes buf(4096 * 4);
    allreduceOn(c, s, buf.get(), 4096);
    std::this_thread::sleep_for(300ms);
    require(cudaStreamQuery(s) == cudaErrorNotReady, "the stream did not wait for the lonely call");
    c.abort();
    const auto start = Clock::now();
    cuda::checkCuda(cudaStreamSynchronize(s), "the stream after abort()");
    require(secondsSince(start) < 3, "abort() released the stream after " + std::to_string(secondsSince(start)) + " s");
    for (int i = 0; i < 200 && !c.asyncError(); ++i) std::this_thread::sleep_for(10ms);
    requireAsyncError(c, ErrorCode::kAborted, "after abort()");
    try {
      allreduceOn(c, s, buf.get(), 4096);
      throw std::runtime_error("a call after abort() was accepted");
    } catch (const Error& e) {
      require(e.code() == ErrorCode::kAborted, std::string("the next call raises Aborted: ") + e.what());
    }
  });
  EXPECT_EQ(testing::failures(results), "");
}

TEST(DetachedCalls, APeerThatDiesReleasesTheStreamAndIsNamed) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  Settings settings = deviceSettings();
  settings.heartbeatIntervalSeconds = 0.2;
  settings.heartbeatTimeoutSeconds = 2;
  const auto results = runDetached(2, settings, [](Communicator& c, cudaStream_t s) {
    warmUp(c, s);
    if (c.rank() == 1) {
      std::this_thread::sleep_for(200ms);
      ::kill(::getpid(), SIGKILL);
    }
    DeviceBytes buf(4096 * 4);
    allreduceOn(c, s, buf.get(), 4096);
    const auto start = Clock::now();
    cuda::checkCuda(cudaStreamSynchronize(s), "the survivor's stream");
    require(secondsSince(start) < 10, "the stream was released after " + std::to_string(secondsSince(start)) + " s");
    const auto error = c.asyncError();
    require(error && error->code() == ErrorCode::kPeerLost && error->context().peer == 1,
            std::string("expected PeerLost naming rank 1: ") + (error ? error->what() : "nothing"));
  });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], "");
}

TEST(DetachedCalls, MismatchesAndBadArgumentsAreNamed) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runDetached(2, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    warmUp(c, s);
    DeviceBytes buf(64 * 4);
    // A bad argument is thrown by the call itself; its peer's detached call fails with Mismatch.
    if (c.rank() == 0) {
      try {
        c.allreduce(buf.get(), nullptr, 64, DataType::kFloat32, ReduceKind::kSum, on(s));
        throw std::runtime_error("a null recv buffer was accepted");
      } catch (const Error& e) {
        require(e.code() == ErrorCode::kInvalidArgument, std::string("InvalidArgument: ") + e.what());
      }
    } else {
      allreduceOn(c, s, buf.get(), 64);
      cuda::checkCuda(cudaStreamSynchronize(s), "the peer's stream");
      for (int i = 0; i < 200 && !c.asyncError(); ++i) std::this_thread::sleep_for(10ms);
      requireAsyncError(c, ErrorCode::kMismatch, "the peer of a rejected call");
      try {
        allreduceOn(c, s, buf.get(), 64);
        throw std::runtime_error("a call after a failed detached call was accepted");
      } catch (const Error& e) {
        require(e.code() == ErrorCode::kMismatch, std::string("the next call raises the failure: ") + e.what());
      }
    }
    // Capture cannot hold a host part: refused by name, before anything is queued (rank 0's communicator goes on
    // after its own bad argument).
    if (c.rank() == 0) {
      const std::string refused = refusedUnderCapture(s, [&] { allreduceOn(c, s, buf.get(), 64); });
      require(refused.find("CUDA graph") != std::string::npos, "capture was not refused by name: '" + refused + "'");
    }
  });
  EXPECT_EQ(testing::failures(results), "");
}

}  // namespace
}  // namespace braid::gputest
