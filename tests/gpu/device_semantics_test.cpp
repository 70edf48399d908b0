// What a CUDA-aware communicator promises beyond the numbers: every memory kind works or is refused by
// name, device calls are ordered on their stream and captured into CUDA graphs, ranks may be threads of one
// process, and a dead peer becomes an error instead of a GPU that spins forever.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <thread>

#include "base/logging.hpp"
#include "gpu/device_ranks.hpp"
#include "gpu/gpu_test_support.hpp"
#include "support/collective_cases.hpp"

namespace braid::gputest {
namespace {

using testing::require;
using namespace std::chrono_literals;

std::vector<float> ramp(std::size_t n, int rank, float step = 1) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i % 97) + rank) * step;
  return v;
}

// The sum over `ranks` ranks of ramp(n, r, step).
std::vector<float> rampSum(std::size_t n, int ranks, float step = 1) {
  std::vector<float> v(n, 0);
  for (int r = 0; r < ranks; ++r) {
    const auto part = ramp(n, r, step);
    for (std::size_t i = 0; i < n; ++i) v[i] += part[i];
  }
  return v;
}

void requireFloats(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  requireSameBytes(got.data(), want.data(), got.size() * 4, 4, what);
}

// An in-place float allreduce of ramps of each count on `s`, checked against the exact sum.
void requireRampAllreduces(Communicator& c, cudaStream_t s, std::initializer_list<std::size_t> counts,
                           const std::string& what) {
  for (std::size_t n : counts) {
    DeviceBytes buf(n * 4);
    const auto in = ramp(n, c.rank());
    upload(buf.get(), in.data(), n * 4, s);
    c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    std::vector<float> got(n);
    download(got.data(), buf.get(), n * 4, s);
    requireFloats(got, rampSum(n, c.size()), what + ", count " + std::to_string(n));
  }
}

// Two ranks as threads of this process (see runOnGpuThreads).
std::vector<std::string> runOnThreadRanks(const Settings& settings,
                                          const std::function<void(Communicator&, cudaStream_t)>& body) {
  return runOnGpuThreads(2, settings, body);
}

TEST(DeviceSemantics, EveryMemoryKindWorksAndMixingHostWithGpuIsRefusedByName) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpus(2, 1, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    const std::size_t n = 100003;
    const auto in = ramp(n, c.rank());
    const auto want = rampSum(n, c.size());
    std::vector<float> got(n);
    // pageable host memory
    std::vector<float> pageable = in;
    c.allreduce(pageable.data(), pageable.data(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    requireFloats(pageable, want, "pageable");
    // pinned host memory
    float* pinned = nullptr;
    cuda::checkCuda(cudaHostAlloc(reinterpret_cast<void**>(&pinned), n * 4, cudaHostAllocDefault), "cudaHostAlloc");
    std::copy(in.begin(), in.end(), pinned);
    c.allreduce(pinned, pinned, n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    requireFloats(std::vector<float>(pinned, pinned + n), want, "pinned");
    // managed memory, with device memory in the same call
    DeviceBytes managed(n * 4, /*managed=*/true), device(n * 4);
    std::copy(in.begin(), in.end(), reinterpret_cast<float*>(managed.get()));
    c.allreduce(managed.get(), device.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    download(got.data(), device.get(), n * 4, s);
    requireFloats(got, want, "managed -> device");
    // host + device in one call: refused on every rank, naming both buffers and kinds
    try {
      c.allreduce(pinned, device.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
      throw std::runtime_error("a call mixing host and device buffers was accepted");
    } catch (const Error& e) {
      const std::string m = e.what();
      require(e.code() == ErrorCode::kInvalidArgument, "expected InvalidArgument: " + m);
      require(
          m.find("send buffer is host") != std::string::npos && m.find("recv buffer is device") != std::string::npos,
          "the error names both buffers and kinds: " + m);
    }
    (void)cudaFreeHost(pinned);
  });
  EXPECT_EQ(testing::failures(results), "");
}

// A host function that sleeps holds the stream: an allreduce queued after it must see the input written after it,
// and a copy queued after the allreduce must see the result.
void CUDART_CB sleepOnStream(void*) { std::this_thread::sleep_for(100ms); }

TEST(DeviceSemantics, DeviceCallsAreOrderedOnTheirStreamAndReturnWithoutWaiting) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpus(2, 1, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    const std::size_t n = 1 << 20;
    DeviceBytes buf(n * 4);
    cuda::checkCuda(cudaMemsetAsync(buf.get(), 0, n * 4, s), "cudaMemsetAsync");
    c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});  // connects
    cuda::checkCuda(cudaStreamSynchronize(s), "sync");
    const auto in = ramp(n, c.rank());
    cuda::checkCuda(cudaLaunchHostFunc(s, sleepOnStream, nullptr), "cudaLaunchHostFunc");
    upload(buf.get(), in.data(), n * 4, s);
    const auto start = std::chrono::steady_clock::now();
    c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    const auto took = std::chrono::steady_clock::now() - start;
    require(took < 50ms,
            "the call waited for its stream (" + std::to_string(std::chrono::duration<double>(took).count()) + " s)");
    std::vector<float> got(n);
    download(got.data(), buf.get(), n * 4, s);
    requireFloats(got, rampSum(n, c.size()), "after the sleeping host function");
    // A call on another stream is ordered after this communicator's previous call.
    cudaStream_t other = nullptr;
    cuda::checkCuda(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda::checkCuda(cudaLaunchHostFunc(s, sleepOnStream, nullptr), "cudaLaunchHostFunc");
    upload(buf.get(), in.data(), n * 4, s);
    c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = other});
    download(got.data(), buf.get(), n * 4, other);
    auto twice = rampSum(n, c.size());
    for (float& v : twice) v *= static_cast<float>(c.size());
    requireFloats(got, twice, "two calls on two streams");
    (void)cudaStreamDestroy(other);
  });
  EXPECT_EQ(testing::failures(results), "");
}

// Ranks that share a GPU take the shared-GPU path by default, which cannot be captured (next test): the kernels,
// which can, are asked for by BRAID_CUDA_SHARED_GPU=kernels there (and used anyway where every rank has a GPU).
TEST(DeviceSemantics, CollectivesAreCapturedIntoACudaGraphAndReplayed) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  Settings settings = deviceSettings();
  settings.cudaSharedGpu = "kernels";
  const auto results = runOnGpus(2, 1, settings, [](Communicator& c, cudaStream_t s) {
    const std::size_t n = 65536 + 5;
    DeviceBytes in(n * 4), out(n * 4), gathered(n * 4 * 2);
    cuda::checkCuda(cudaMemsetAsync(in.get(), 0, n * 4, s), "memset");
    c.allreduce(in.get(), out.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});  // connects first
    cuda::checkCuda(cudaStreamSynchronize(s), "sync");
    cudaGraph_t graph = nullptr;
    cuda::checkCuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    c.allreduce(in.get(), out.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    c.allgather(out.get(), gathered.get(), n, DataType::kFloat32, {.stream = s});
    cuda::checkCuda(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture");
    cudaGraphExec_t exec = nullptr;
    cuda::checkCuda(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    for (int replay = 1; replay <= 3; ++replay) {
      const auto mine = ramp(n, c.rank(), static_cast<float>(replay));
      upload(in.get(), mine.data(), n * 4, s);
      cuda::checkCuda(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
      std::vector<float> got(n), all(2 * n);
      download(got.data(), out.get(), n * 4, s);
      download(all.data(), gathered.get(), n * 8, s);
      const auto want = rampSum(n, c.size(), static_cast<float>(replay));
      requireFloats(got, want, "replay " + std::to_string(replay));
      requireFloats(std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(n), all.end()), want,
                    "replay " + std::to_string(replay) + " allgather");
    }
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
  });
  EXPECT_EQ(testing::failures(results), "");
}

TEST(DeviceSemantics, CaptureOnTheSharedGpuPathIsRefusedByNameAndTheCommunicatorGoesOn) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpus(2, 1, deviceSettings("shared"), [](Communicator& c, cudaStream_t s) {
    const std::size_t n = 1000;
    DeviceBytes buf(n * 4);
    upload(buf.get(), ramp(n, c.rank()).data(), n * 4, s);
    c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    cuda::checkCuda(cudaStreamSynchronize(s), "sync");
    const std::string refused = refusedUnderCapture(
        s, [&] { c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s}); });
    require(!refused.empty(), "a capture on the shared-GPU path was accepted");
    require(refused.find("CUDA graph") != std::string::npos &&
                refused.find("BRAID_CUDA_SHARED_GPU=kernels") != std::string::npos,
            "the refusal names neither the capture nor the way out: " + refused);
    // Nothing was queued or met: the next call is the same on every rank and works.
    c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    std::vector<float> got(n);
    download(got.data(), buf.get(), n * 4, s);
    auto want = rampSum(n, c.size());
    for (float& v : want) v *= static_cast<float>(c.size());
    requireFloats(got, want, "after the refused capture");
  });
  EXPECT_EQ(testing::failures(results), "");
}

// A peer that dies is noticed within 2 s.
void noticeDeathsQuickly(Settings& settings) {
  settings.heartbeatIntervalSeconds = 0.2;
  settings.heartbeatTimeoutSeconds = 2;
}

// One allreduce of n floats on buf, then rank 1 dies: the survivor's next call meets a dead peer.
void allreduceThenRank1Dies(Communicator& c, cudaStream_t s, DeviceBytes& buf, std::size_t n) {
  cuda::checkCuda(cudaMemsetAsync(buf.get(), 0, n * 4, s), "memset");
  c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
  cuda::checkCuda(cudaStreamSynchronize(s), "sync");
  c.barrier();
  if (c.rank() == 1) ::kill(::getpid(), SIGKILL);
}

// braid's kernels, which spin on flags their peers raise: the watchdog makes them give up.
TEST(DeviceSemantics, AKilledPeerBecomesPeerLostInsteadOfAHungGpu) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  Settings settings = deviceSettings();
  settings.cudaSharedGpu = "kernels";
  noticeDeathsQuickly(settings);
  const auto results = runOnGpus(
      2, 1, settings,
      [](Communicator& c, cudaStream_t s) {
        const std::size_t n = 1 << 20;
        DeviceBytes buf(n * 4);
        allreduceThenRank1Dies(c, s, buf, n);
        const auto start = std::chrono::steady_clock::now();
        c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
        cuda::checkCuda(cudaStreamSynchronize(s), "the stream of a kernel whose peer died");
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        require(took < 10, "the kernel gave up only after " + std::to_string(took) + " s");
        const auto error = c.asyncError();
        require(error.has_value(), "asyncError() reports nothing after the peer died");
        require(error->code() == ErrorCode::kPeerLost && error->context().peer == 1,
                std::string("expected PeerLost naming rank 1: ") + error->what());
        try {
          c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
          throw std::runtime_error("a call after the kernel failure was accepted");
        } catch (const Error& e) {
          require(e.code() == ErrorCode::kPeerLost, std::string("the next call raises PeerLost: ") + e.what());
        }
      },
      60);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], "");
}

TEST(DeviceSemantics, RanksInDifferentCallsOnTheSharedGpuPathGetMismatchNamingBoth) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto results = runOnGpus(2, 1, deviceSettings("shared"), [](Communicator& c, cudaStream_t s) {
    const std::size_t n = 1000 + 7 * static_cast<std::size_t>(c.rank());  // rank 1 brings 7 elements more
    DeviceBytes buf(2000 * 4);
    upload(buf.get(), ramp(1000, c.rank()).data(), 1000 * 4, s);
    try {
      c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
      throw std::runtime_error("allreduces of 1000 and 1007 elements went through");
    } catch (const Error& e) {
      const std::string what = e.what();
      require(e.code() == ErrorCode::kMismatch, "not Mismatch: " + what);
      require(what.find("1000") != std::string::npos && what.find("1007") != std::string::npos,
              "the Mismatch names not both counts: " + what);
    }
    // Every rank failed that call alike: the communicator goes on.
    c.allreduce(buf.get(), buf.get(), 1000, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
    std::vector<float> got(1000);
    download(got.data(), buf.get(), 1000 * 4, s);
    requireFloats(got, rampSum(1000, c.size()), "the call after the mismatch");
  });
  EXPECT_EQ(testing::failures(results), "");
}

// The shared-GPU path: nothing on the GPU waits for the peer, the host meeting does, and it learns of the death.
TEST(DeviceSemantics, AKilledPeerOnTheSharedGpuPathIsPeerLostWithinSeconds) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  Settings settings = deviceSettings("shared");
  noticeDeathsQuickly(settings);
  const auto results = runOnGpus(
      2, 1, settings,
      [](Communicator& c, cudaStream_t s) {
        const std::size_t n = 1 << 20;
        DeviceBytes buf(n * 4);
        allreduceThenRank1Dies(c, s, buf, n);
        const auto start = std::chrono::steady_clock::now();
        try {
          c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
          throw std::runtime_error("an allreduce with a dead peer returned");
        } catch (const Error& e) {
          require(e.code() == ErrorCode::kPeerLost, std::string("expected PeerLost: ") + e.what());
        }
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        require(took < 10, "the call failed only after " + std::to_string(took) + " s");
        cuda::checkCuda(cudaStreamSynchronize(s), "this rank's stream after the failure");
      },
      60);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], "");
}

// Rank 0 waits 300 ms for a late rank 1, fails, and its communicator breaks; rank 1, arriving after that, must
// fail with PeerLost naming rank 0 within a call or two, not wait out its own 60-s timeout for a peer that makes no
// more calls. Rank 0 lives on meanwhile: its exit would tell rank 1 by other means.
void aLateRankLearnsItsPeerBroke(const Settings& settings) {
  const auto results = runOnGpus(
      2, 1, settings,
      [](Communicator& c, cudaStream_t s) {
        const std::size_t n = 1 << 16;
        DeviceBytes buf(n * 4);
        cuda::checkCuda(cudaMemsetAsync(buf.get(), 0, n * 4, s), "memset");
        c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
        cuda::checkCuda(cudaStreamSynchronize(s), "the first allreduce");
        if (c.rank() == 0) {
          bool failed = false;  // at the call, or (its kernels gave up after it returned) at the next one
          for (int call = 0; call < 2 && !failed; ++call) {
            try {
              c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum,
                          {.timeout = 300ms, .stream = s});
              cuda::checkCuda(cudaStreamSynchronize(s), "rank 0's stream");
            } catch (const Error&) {
              failed = true;
            }
          }
          require(failed, "rank 0 finished two allreduces its peer was 1.5 s late for");
          std::this_thread::sleep_for(4s);
          return;
        }
        std::this_thread::sleep_for(1500ms);
        const auto start = std::chrono::steady_clock::now();
        std::optional<Error> error;
        for (int call = 0; call < 2 && !error; ++call) {
          try {
            c.allreduce(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s});
            cuda::checkCuda(cudaStreamSynchronize(s), "rank 1's stream");
            error = c.asyncError();
          } catch (const Error& e) {
            error = e;
          }
        }
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        require(error.has_value(), "rank 1 finished two allreduces with a peer whose communicator broke");
        require(error->code() == ErrorCode::kPeerLost && error->context().peer == 0 &&
                    std::string(error->what()).find("peer 0 failed") != std::string::npos,
                std::string("expected PeerLost saying rank 0 failed: ") + error->what());
        require(took < 3, "rank 1 failed only after " + std::to_string(took) + " s");
        cuda::checkCuda(cudaStreamSynchronize(s), "rank 1's stream after the failure");
      },
      60);
  EXPECT_EQ(testing::failures(results), "");
}

TEST(DeviceSemantics, ALateRanksKernelsGiveUpOnAPeerThatBroke) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  Settings settings = deviceSettings();
  settings.cudaSharedGpu = "kernels";
  aLateRankLearnsItsPeerBroke(settings);
}

TEST(DeviceSemantics, ALateRankOnTheSharedGpuPathFailsAtOnceWithAPeerThatBroke) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  aLateRankLearnsItsPeerBroke(deviceSettings("shared"));
}

TEST(DeviceSemantics, WithoutAUsableChannelDeviceBuffersAreStagedThroughHostMemory) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  Settings settings = deviceSettings();
  settings.cudaWorkspaceBytes = 4096;  // too small for a channel: every rank falls back to staging, together
  const auto results = runOnGpus(2, 1, settings, [](Communicator& c, cudaStream_t s) {
    requireRampAllreduces(c, s, {5, 300007}, "staged");
    require(!c.asyncError().has_value(), "no asynchronous error on the staged path");
  });
  EXPECT_EQ(testing::failures(results), "");
}

TEST(DeviceSemantics, RanksAsThreadsOfOneProcessShareTheirGpus) {
  BRAID_SKIP_WITHOUT_GPUS(1);  // on one GPU: the shared-GPU path (no kernel waits for the other thread's)
  const auto results = runOnThreadRanks(deviceSettings(), [](Communicator& c, cudaStream_t s) {
    requireRampAllreduces(c, s, {3, std::size_t{1} << 20}, "threads");
  });
  EXPECT_EQ(testing::failures(results), "");
}

// The first call on GPU memory is async, so it runs on the communicator's progress thread, whose current GPU is
// GPU 0 on every rank: the engine must bind the GPU of the buffers (rank 1 once bound GPU 0 and summed junk). A
// host call queued in front makes the sync call after it run there as well.
void firstDeviceCallOnTheProgressThread(Communicator& c, cudaStream_t s, const std::string& what) {
  const std::size_t n = (std::size_t{1} << 16) + 3;
  DeviceBytes buf(n * 4);
  const auto in = ramp(n, c.rank());
  upload(buf.get(), in.data(), n * 4, s);
  c.allreduceAsync(buf.get(), buf.get(), n, DataType::kFloat32, ReduceKind::kSum, {.stream = s}).wait();
  std::vector<float> got(n);
  download(got.data(), buf.get(), n * 4, s);
  requireFloats(got, rampSum(n, c.size()), what + ": async device call first");
  std::vector<float> host(std::size_t{1} << 20, 1.0f);
  Work queued = c.allreduceAsync(host.data(), host.data(), host.size(), DataType::kFloat32, ReduceKind::kSum);
  requireRampAllreduces(c, s, {5, 300007}, what + ": sync device call behind an async host call");
  queued.wait();
  require(std::all_of(host.begin(), host.end(), [&](float v) { return v == static_cast<float>(c.size()); }),
          what + ": the host call");
}

// With one GPU the wrong-device binding cannot show (every rank's GPU is GPU 0); the calls from the progress
// thread are still checked.
TEST(DeviceSemantics, CallsRunOnTheBuffersGpuWhicheverThreadRunsThem) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  const auto processes = runOnGpus(2, 1, deviceSettings(), [](Communicator& c, cudaStream_t s) {
    firstDeviceCallOnTheProgressThread(c, s, "processes");
  });
  EXPECT_EQ(testing::failures(processes), "");
  const auto threads = runOnThreadRanks(
      deviceSettings(), [](Communicator& c, cudaStream_t s) { firstDeviceCallOnTheProgressThread(c, s, "threads"); });
  EXPECT_EQ(testing::failures(threads), "");
}

// BRAID_CUDA_TIMELINE=1: a line per kernel, once it ended, with its GPU time (all of them by the communicator's end).
// The timeline times braid's kernels: asked for where the ranks share a GPU (the shared-GPU path launches none of
// them). Process ranks, forked after the capture of stderr began, so their log lands in it; thread ranks would
// depend on both ranks' kernels being resident on one GPU together, which CUDA does not promise.
TEST(DeviceSemantics, TheTimelineLogsEveryKernelsGpuTime) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  Settings settings = deviceSettings();
  settings.cudaSharedGpu = "kernels";
  settings.cudaTimeline = 1;
  settings.logLevel = "info";  // every communicator applies its own level when created
  ::testing::internal::CaptureStderr();
  const auto results = runOnGpus(2, 1, settings, [](Communicator& c, cudaStream_t s) {
    requireRampAllreduces(c, s, {3, 5000, 30011}, "timed");
  });
  const std::string log = ::testing::internal::GetCapturedStderr();
  setLogLevel("warn");
  EXPECT_EQ(testing::failures(results), "");
  for (int rank = 0; rank < 2; ++rank) {
    for (int n = 1; n <= 3; ++n) {
      const std::string line =
          "braid[rank " + std::to_string(rank) + "] info: timeline #" + std::to_string(n) + ": allreduce seq ";
      EXPECT_NE(log.find(line), std::string::npos) << "no \"" << line << "\" in:\n" << log;
    }
  }
  EXPECT_NE(log.find(" us, stream idle "), std::string::npos) << log;
}

// BRAID_CUDA_MEMORY=ipc: workspaces shared through cudaMalloc + cudaIpc handles (where cuMem cannot export POSIX
// fds), between processes (handles opened) and between threads of one process (the owner's pointer).
void allreduceAndAllgather(Communicator& c, cudaStream_t s, const std::string& what) {
  requireRampAllreduces(c, s, {3, std::size_t{1} << 20, (std::size_t{24} << 20) + 5}, what + ", allreduce");
  const std::size_t n = 4099;
  DeviceBytes mine(n * 4), all(n * 4 * static_cast<std::size_t>(c.size()));
  const auto in = ramp(n, c.rank());
  upload(mine.get(), in.data(), n * 4, s);
  c.allgather(mine.get(), all.get(), n, DataType::kFloat32, {.stream = s});
  std::vector<float> got(n * static_cast<std::size_t>(c.size()));
  download(got.data(), all.get(), got.size() * 4, s);
  for (int r = 0; r < c.size(); ++r) {
    const auto want = ramp(n, r);
    require(std::equal(want.begin(), want.end(), got.begin() + static_cast<std::ptrdiff_t>(n) * r),
            what + ", allgather block of rank " + std::to_string(r));
  }
  require(!c.asyncError().has_value(), what + ": no asynchronous error");
}

TEST(DeviceSemantics, WorkspacesSharedThroughCudaIpcHandlesBetweenProcesses) {
  BRAID_SKIP_WITHOUT_GPUS(1);
  Settings settings = deviceSettings();
  settings.cudaMemory = "ipc";
  const auto results = runOnGpus(
      2, 1, settings, [](Communicator& c, cudaStream_t s) { allreduceAndAllgather(c, s, "cudaIpc, processes"); });
  EXPECT_EQ(testing::failures(results), "");
}

TEST(DeviceSemantics, WorkspacesSharedThroughCudaIpcBetweenThreadsOfOneProcess) {
  BRAID_SKIP_WITHOUT_GPUS(1);  // on one GPU: the shared-GPU path (no kernel waits for the other thread's)
  Settings settings = deviceSettings();
  settings.cudaMemory = "ipc";
  const auto results = runOnThreadRanks(
      settings, [](Communicator& c, cudaStream_t s) { allreduceAndAllgather(c, s, "cudaIpc, threads"); });
  EXPECT_EQ(testing::failures(results), "");
}

}  // namespace
}  // namespace braid::gputest
