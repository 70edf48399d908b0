// Ranks as processes, each on a GPU (rank % GPUs), for the tests of collectives on device buffers. The test process
// itself never touches CUDA before it forks (a child of a process with a CUDA context cannot use CUDA): it asks a
// short-lived child how many GPUs there are.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "braid/braid.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "support/rank_runner.hpp"

namespace braid::gputest {

/// CUDA devices, counted in a child process so that this one stays free of CUDA.
inline int gpusSeenByAChild() {
  static const int count = [] {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int n = 0;
      if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
      ::_exit(n > 100 ? 100 : n);
    }
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 0;
    return WEXITSTATUS(status);
  }();
  return count;
}

inline bool& pooledDeviceBytes();

/// Whether the tests' calls ask to run apart from their callers (CallOptions::streamAsync), as the NCCL library's
/// do. Set before ranks fork; reset by deviceSettings().
inline bool& detachedCalls() {
  static bool detached = false;
  return detached;
}

/// The options of a test's call on stream `s`.
inline CallOptions on(cudaStream_t s) { return {.stream = s, .streamAsync = detachedCalls()}; }

/// Settings of the device tests: the environment's, a timeout that fails a hang within the test's limit, and
/// shared memory between the ranks (the transport cuda_ipc is set up over). Test buffers come from cudaMalloc
/// again (pooledDeviceBytes).
inline Settings deviceSettings(const std::string& algo = "") {
  pooledDeviceBytes() = false;
  detachedCalls() = false;
  Settings s = testing::testSettings();
  s.transport = "shm";
  s.timeoutSeconds = 60;
  s.algo = algo;
  return s;
}

/// One rank's part: its GPU (rank % GPUs) current, `body` on a stream of its own, then that stream drained.
inline void onItsGpu(Communicator& comm, int gpus, const std::function<void(Communicator&, cudaStream_t)>& body) {
  cuda::checkCuda(cudaSetDevice(comm.rank() % gpus), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  cuda::checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  body(comm, stream);
  cuda::checkCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  (void)cudaStreamDestroy(stream);
}

/// Runs `body` on `ranks` processes, rank r on GPU r % GPUs (with one GPU every rank shares it); runs nothing when
/// there are fewer than `minGpus` GPUs (the caller skips first, with BRAID_SKIP_WITHOUT_GPUS). Returns the per-rank
/// failures (empty strings when all passed).
inline std::vector<std::string> runOnGpus(int ranks, int minGpus, const Settings& settings,
                                          const std::function<void(Communicator&, cudaStream_t)>& body,
                                          double timeoutSeconds = 300) {
  const int gpus = gpusSeenByAChild();
  if (gpus < minGpus) return {};
  return testing::runProcessesWith(
      ranks, settings, [&](Communicator& comm) { onItsGpu(comm, gpus, body); }, timeoutSeconds);
}

/// Runs `body` on `ranks` threads of this process, rank r on GPU r % GPUs, each with a stream of its own. This
/// process then holds a CUDA context, so a test that calls it forks no ranks afterwards. Where ranks share a GPU
/// they take the shared-GPU path, on which no kernel waits for another rank's; a test that asks for braid's kernels
/// there (BRAID_CUDA_SHARED_GPU=kernels) depends on the threads' kernels being resident at once, which CUDA does
/// not promise: it must fail, not stall the run, so the communicator's timeout (its kernels spin under it too) is
/// short, well inside the test's limit.
inline std::vector<std::string> runOnGpuThreads(int ranks, Settings settings,
                                                const std::function<void(Communicator&, cudaStream_t)>& body) {
  const int gpus = gpusSeenByAChild();
  if (gpus < 1) return {};
  settings.timeoutSeconds = 30;
  return testing::runThreads(
      ranks, [&](Communicator& c) { onItsGpu(c, gpus, body); }, settings);
}

/// runOnGpuThreads where `layout` is "threads", else runOnGpus (processes).
inline std::vector<std::string> runOnRanks(const std::string& layout, int ranks, const Settings& settings,
                                           const std::function<void(Communicator&, cudaStream_t)>& body) {
  return layout == "threads" ? runOnGpuThreads(ranks, settings, body) : runOnGpus(ranks, 1, settings, body);
}

/// True where the ranks of a test share one GPU (process ranks are time-sliced on it: a few ms per call), so that
/// tests scale their largest sizes down there.
inline bool gpuIsShared() { return gpusSeenByAChild() < 2; }

#define BRAID_SKIP_WITHOUT_GPUS(n)                \
  if (::braid::gputest::gpusSeenByAChild() < (n)) \
  GTEST_SKIP() << "needs " << (n) << " CUDA device(s), found " << ::braid::gputest::gpusSeenByAChild()

/// Throws (failing the rank) when the bytes differ, naming the first differing element.
inline void requireSameBytes(const void* got, const void* want, std::size_t bytes, std::size_t elemSize,
                             const std::string& what) {
  if (bytes == 0 || std::memcmp(got, want, bytes) == 0) return;
  const auto* g = static_cast<const unsigned char*>(got);
  const auto* w = static_cast<const unsigned char*>(want);
  std::size_t first = 0;
  while (g[first] == w[first]) ++first;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < bytes; i += elemSize) bad += std::memcmp(g + i, w + i, elemSize) != 0;
  throw std::runtime_error(what + ": " + std::to_string(bad) + " of " + std::to_string(bytes / elemSize) +
                           " elements differ from the expected bytes, first element " +
                           std::to_string(first / elemSize));
}

/// `bytes` bytes that differ from their neighbours and, with another `salt`, from another pattern's.
inline std::vector<std::byte> bytePattern(std::size_t bytes, std::uint8_t salt) {
  std::vector<std::byte> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = static_cast<std::byte>((i * 131 + salt) & 0xff);
  return v;
}

/// Whether DeviceBytes takes its memory from the device's stream-ordered pool (cudaMallocAsync), which CUDA IPC
/// cannot share: set before ranks fork, it sends processes on one GPU from the leader path to its fallback.
inline bool& pooledDeviceBytes() {
  static bool pooled = false;
  return pooled;
}

/// Device memory for a test rank (cudaMalloc, or cudaMallocManaged when managed, or the pool's: pooledDeviceBytes).
class DeviceBytes {
 public:
  explicit DeviceBytes(std::size_t bytes, bool managed = false) {
    const std::size_t n = bytes == 0 ? 16 : bytes;
    if (pooledDeviceBytes() && !managed) {
      cuda::checkCuda(cudaMallocAsync(&ptr_, n, nullptr), "cudaMallocAsync");
      cuda::checkCuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize(cudaMallocAsync)");
      return;
    }
    cuda::checkCuda(managed ? cudaMallocManaged(&ptr_, n) : cudaMalloc(&ptr_, n), "cudaMalloc");
  }
  ~DeviceBytes() { (void)cudaFree(ptr_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  std::byte* get() const { return static_cast<std::byte*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

inline void upload(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
  cuda::checkCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync(upload)");
}
inline void download(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
  cuda::checkCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync(download)");
  cuda::checkCuda(cudaStreamSynchronize(s), "cudaStreamSynchronize(download)");
}

/// Runs `call` while `s` is captured into a CUDA graph (then ends the capture and drops the graph): the text of the
/// Unavailable error it threw, empty when it threw none. Any other error fails the rank.
inline std::string refusedUnderCapture(cudaStream_t s, const std::function<void()>& call) {
  cudaGraph_t graph = nullptr;
  cuda::checkCuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  std::string refused;
  try {
    call();
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnavailable) throw std::runtime_error(std::string("not Unavailable: ") + e.what());
    refused = e.what();
  }
  cuda::checkCuda(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture");
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  return refused;
}

}  // namespace braid::gputest
