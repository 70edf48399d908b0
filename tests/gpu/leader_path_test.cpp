// The leader path of processes on one GPU (algorithms/device/leader.hpp): rank 0 maps the others' buffers and does
// each call's GPU work, the others' streams only wait. The collectives' results on it are checked by the
// DeviceReductions and DeviceCollectives suites ("shared", and "pooled" for its fallback); here: that it is the
// path taken, that buffers it cannot map fall back on every rank, that it survives more allocations than it keeps
// open, and that no stream waits forever when a peer dies or the communicator is aborted. Every rank is on GPU 0,
// whatever the machine has.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/device/device_engine.hpp"
#include "core/communicator_impl.hpp"
#include "cuda/runtime/stream_writes.hpp"
#include "gpu/device_ranks.hpp"
#include "support/collective_cases.hpp"
#include "support/internals.hpp"

namespace braid::gputest {
namespace {

using namespace std::chrono_literals;
using testing::require;

const device::DeviceEngine& engineOf(Communicator& c) {
  const auto* engine = dynamic_cast<const device::DeviceEngine*>(test::implOf(c).deviceEngine());
  if (engine == nullptr) throw std::runtime_error("the communicator has no device engine yet");
  return *engine;
}

// `ranks` processes, all on GPU 0, each with a non-blocking stream of its own.
std::vector<std::string> runOnGpu0(int ranks, const Settings& settings,
                                   const std::function<void(Communicator&, cudaStream_t)>& body) {
  if (gpusSeenByAChild() < 1) return {};
  return testing::runProcessesWith(
      ranks, settings, [&](Communicator& comm) { onItsGpu(comm, 1, body); }, 120);
}

std::vector<float> ramp(std::size_t n, int rank) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i % 89) + 3 * rank);
  return v;
}

std::vector<float> rampSum(std::size_t n, int ranks) {
  std::vector<float> v(n, 0);
  for (int r = 0; r < ranks; ++r) {
    const auto part = ramp(n, r);
    for (std::size_t i = 0; i < n; ++i) v[i] += part[i];
  }
  return v;
}

// An allreduce of ramps from send into recv, checked exactly.
void rampAllreduce(Communicator& c, cudaStream_t s, std::byte* send, std::byte* recv, std::size_t n,
                   const std::string& what) {
  upload(send, ramp(n, c.rank()).data(), n * 4, s);
  c.allreduce(send, recv, n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
  std::vector<float> got(n);
  download(got.data(), recv, n * 4, s);
  const auto want = rampSum(n, c.size());
  requireSameBytes(got.data(), want.data(), n * 4, 4, what + ", " + std::to_string(n) + " floats");
}

// Holds a stream in a wait that only the test ends, as a rank busy with earlier work would.
class StreamHold {
 public:
  explicit StreamHold(cudaStream_t s) : word_(8) {
    cuda::checkCuda(cudaMemset(word_.get(), 0, 8), "cudaMemset(hold)");
    const cuda::StreamWord wait{cuda::StreamWord::Kind::kWaitAtLeast, word_.get(), 1};
    cuda::queueStreamWords(&wait, 1, s, "hold the stream");
  }
  void letGo() {
    const std::uint64_t one = 1;
    cudaStream_t side = nullptr;
    cuda::checkCuda(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "cudaStreamCreate(let go)");
    cuda::checkCuda(cudaMemcpyAsync(word_.get(), &one, 8, cudaMemcpyHostToDevice, side), "cudaMemcpyAsync(let go)");
    cuda::checkCuda(cudaStreamSynchronize(side), "cudaStreamSynchronize(let go)");
    (void)cudaStreamDestroy(side);
  }

 private:
  DeviceBytes word_;
};

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void noticeDeathsQuickly(Settings& settings) {
  settings.heartbeatIntervalSeconds = 0.2;
  settings.heartbeatTimeoutSeconds = 2;
}

TEST(LeaderPath, ProcessesOnOneGpuTakeItAndBuffersItCannotMapFallBackOnEveryRank) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  for (int ranks : {2, 3}) {
    const auto results = runOnGpu0(ranks, deviceSettings(), [](Communicator& c, cudaStream_t s) {
      for (std::size_t n : {std::size_t{2}, std::size_t{4099}, (std::size_t{1} << 20) + 3}) {
        DeviceBytes send(n * 4), recv(n * 4);
        rampAllreduce(c, s, send.get(), recv.get(), n, "out of place");
        rampAllreduce(c, s, recv.get(), recv.get(), n, "in place");
      }
      const device::DeviceEngine& engine = engineOf(c);
      require(engine.coLocatedPath().find("leader") != std::string::npos,
              "processes on one GPU are not on the leader path: " + engine.coLocatedPath());
      const std::uint64_t before = engine.oneContextCalls();
      require(before == 6, "the leader path counted " + std::to_string(before) + " of 6 calls");
      // Rank 1's buffers from the stream-ordered pool, which CUDA IPC cannot share: every rank falls back.
      pooledDeviceBytes() = c.rank() == 1;
      DeviceBytes pooled(4099 * 4);
      pooledDeviceBytes() = false;
      rampAllreduce(c, s, pooled.get(), pooled.get(), 4099, "one rank's pooled buffer");
      require(engine.oneContextCalls() == before, "a call on a buffer CUDA IPC cannot share took the leader path");
      // And back on the leader path.
      DeviceBytes again(64 * 4);
      rampAllreduce(c, s, again.get(), again.get(), 64, "after the fallback");
      require(engine.oneContextCalls() == before + 1, "the call after the fallback left the leader path");
    });
    EXPECT_EQ(testing::failures(results), "") << ranks << " ranks";
  }
}

// The leader keeps 32 allocations of each follower open: 40 in turn, twice over, close and reopen them, while
// the same allocation comes back as send of one call and recv of the next.
TEST(LeaderPath, MoreAllocationsThanItKeepsOpenAreMappedAgain) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpu0(2, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    std::vector<std::unique_ptr<DeviceBytes>> buffers;
    for (int i = 0; i < 40; ++i) buffers.push_back(std::make_unique<DeviceBytes>(1000 * 4));
    for (int round = 0; round < 2; ++round) {
      for (std::size_t i = 0; i < buffers.size(); ++i) {
        std::byte* send = buffers[i]->get();
        std::byte* recv = buffers[(i + 1) % buffers.size()]->get();
        rampAllreduce(c, s, send, recv, 1000, "round " + std::to_string(round) + ", buffer " + std::to_string(i));
      }
    }
    // A freed allocation's memory handed out again is a new allocation to the leader.
    buffers.clear();
    DeviceBytes fresh(1000 * 4);
    rampAllreduce(c, s, fresh.get(), fresh.get(), 1000, "a new allocation after frees");
  });
  EXPECT_EQ(testing::failures(results), "");
}

// Rank `dying` dies with its part of a call queued behind work that never ends: the survivor's stream, waiting for
// its word, is released within seconds, and the loss is reported naming it. Returns the survivor's failure.
std::string survivorOfALossWhileWaiting(int dying) {
  Settings settings = deviceSettings();
  noticeDeathsQuickly(settings);
  const auto results = runOnGpu0(2, settings, [dying](Communicator& c, cudaStream_t s) {
    DeviceBytes buf(4096 * 4);
    rampAllreduce(c, s, buf.get(), buf.get(), 4096, "before");
    if (c.rank() == dying) {
      StreamHold hold(s);
      c.allreduce(buf.get(), buf.get(), 4096, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
      ::kill(::getpid(), SIGKILL);
    }
    c.allreduce(buf.get(), buf.get(), 4096, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    const auto start = std::chrono::steady_clock::now();
    cuda::checkCuda(cudaStreamSynchronize(s), "the survivor's stream after its peer died");
    require(secondsSince(start) < 10, "the stream was released after " + std::to_string(secondsSince(start)) + " s");
    const auto error = c.asyncError();
    require(error.has_value() && error->code() == ErrorCode::kPeerLost && error->context().peer == dying,
            "expected PeerLost naming rank " + std::to_string(dying) +
                " from asyncError: " + (error ? error->what() : "nothing"));
    try {
      c.allreduce(buf.get(), buf.get(), 4096, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
      throw std::runtime_error("a call after the loss was accepted");
    } catch (const Error& e) {
      require(e.code() == ErrorCode::kPeerLost, std::string("the next call raises PeerLost: ") + e.what());
    }
  });
  return results.size() == 2 ? results[static_cast<std::size_t>(1 - dying)] : "ranks did not all report";
}

TEST(LeaderPath, AFollowerLostWhileTheLeaderWaitsForItReleasesTheLeadersStream) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  EXPECT_EQ(survivorOfALossWhileWaiting(1), "");
}

TEST(LeaderPath, TheLeaderLostWhileAFollowerWaitsForItReleasesTheFollowersStream) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  EXPECT_EQ(survivorOfALossWhileWaiting(0), "");
}

// abort() releases this rank's queued waits at once, on the leader and on a follower.
TEST(LeaderPath, AbortReleasesTheQueuedCallsOfEitherRole) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpu0(2, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    DeviceBytes buf(4096 * 4);
    rampAllreduce(c, s, buf.get(), buf.get(), 4096, "before");
    std::unique_ptr<StreamHold> hold;
    if (c.rank() == 1) hold = std::make_unique<StreamHold>(s);  // the follower's part waits behind it
    c.allreduce(buf.get(), buf.get(), 4096, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    c.barrier();
    if (c.rank() == 0) {
      c.abort();
      const auto start = std::chrono::steady_clock::now();
      cuda::checkCuda(cudaStreamSynchronize(s), "the leader's stream after abort");
      require(secondsSince(start) < 5, "the leader's stream ended " + std::to_string(secondsSince(start)) +
                                           " s after abort, its follower still held");
      return;
    }
    std::this_thread::sleep_for(6s);  // the leader's check above ends while this stream is still held
    c.abort();
    hold->letGo();
    const auto start = std::chrono::steady_clock::now();
    cuda::checkCuda(cudaStreamSynchronize(s), "the follower's stream after abort");
    require(secondsSince(start) < 5,
            "the follower's stream ended " + std::to_string(secondsSince(start)) + " s after abort, its leader gone");
  });
  EXPECT_EQ(testing::failures(results), "");
}

}  // namespace
}  // namespace braid::gputest
