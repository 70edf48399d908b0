// measureLinks(): copies between every GPU pair and between host and each GPU, timed with CUDA events, against
// what the link should give. Thresholds are floors, not targets: a link below them is broken or mis-negotiated
// (a GPU in a x4 slot, peer access off, a PCIe switch in the way), not merely slow.
#include "topology/doctor_checks.hpp"

#if BRAID_WITH_CUDA
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#endif

namespace braid::tools {

#if BRAID_WITH_CUDA

namespace {

constexpr std::size_t kBytes = std::size_t{256} << 20;
constexpr int kRepetitions = 5;
// Floors in GB/s: NVLink peers copy at 100+ (H100/H200: ~300 over the copy engines), PCIe 4.0 x16 at ~25 and
// 5.0 at ~50 (a quarter of that is a link gone wrong); pinned host memory at PCIe speed.
constexpr double kNvlinkFloor = 100;
constexpr double kPcieFloor = 6;

// The best of kRepetitions copies, in GB/s; 0 when a CUDA call failed.
template <typename Copy>
double bestRate(int device, Copy copy) {
  if (cudaSetDevice(device) != cudaSuccess) return 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return 0;
  (void)cudaEventCreate(&start);
  (void)cudaEventCreate(&stop);
  double best = 0;
  for (int i = 0; i < kRepetitions + 1; ++i) {
    (void)cudaEventRecord(start, stream);
    if (copy(stream) != cudaSuccess) break;
    (void)cudaEventRecord(stop, stream);
    if (cudaEventSynchronize(stop) != cudaSuccess) break;
    float ms = 0;
    (void)cudaEventElapsedTime(&ms, start, stop);
    if (i > 0 && ms > 0) best = std::max(best, kBytes / (ms / 1e3) / 1e9);  // the first one warms up
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  (void)cudaStreamDestroy(stream);
  (void)cudaGetLastError();
  return best;
}

std::string rate(double gbs) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f GB/s", gbs);
  return text;
}

}  // namespace

std::vector<Check> measureLinks(const topology::Topology& t) {
  std::vector<Check> checks;
  const int n = static_cast<int>(t.gpus.size());
  std::vector<void*> buffers(static_cast<std::size_t>(n), nullptr);
  for (int d = 0; d < n; ++d) {
    if (cudaSetDevice(d) != cudaSuccess || cudaMalloc(&buffers[static_cast<std::size_t>(d)], kBytes) != cudaSuccess) {
      (void)cudaGetLastError();
      checks.push_back({"bandwidth", Verdict::kWarn, "cannot allocate 256 MiB on GPU " + std::to_string(d)});
      return checks;
    }
  }
  void* host = nullptr;
  if (cudaMallocHost(&host, kBytes) == cudaSuccess) {
    for (int d = 0; d < n; ++d) {
      void* dev = buffers[static_cast<std::size_t>(d)];
      const double h2d =
          bestRate(d, [&](cudaStream_t s) { return cudaMemcpyAsync(dev, host, kBytes, cudaMemcpyHostToDevice, s); });
      const double d2h =
          bestRate(d, [&](cudaStream_t s) { return cudaMemcpyAsync(host, dev, kBytes, cudaMemcpyDeviceToHost, s); });
      const bool ok = std::min(h2d, d2h) >= kPcieFloor;
      checks.push_back({"host-copy", ok ? Verdict::kOk : Verdict::kWarn,
                        "GPU " + std::to_string(d) + ": host to GPU " + rate(h2d) + ", GPU to host " + rate(d2h) +
                            (ok ? "" : " (below " + rate(kPcieFloor) + ": a narrow or slow PCIe link?)")});
    }
    (void)cudaFreeHost(host);
  }
  for (const topology::GpuPair& p : t.gpuPairs) {
    if (!p.p2p) continue;
    if (cudaSetDevice(p.a) == cudaSuccess) {
      const cudaError_t e = cudaDeviceEnablePeerAccess(p.b, 0);
      if (e != cudaSuccess) (void)cudaGetLastError();  // already enabled is fine
    }
    void* src = buffers[static_cast<std::size_t>(p.a)];
    void* dst = buffers[static_cast<std::size_t>(p.b)];
    const double gbs =
        bestRate(p.a, [&](cudaStream_t s) { return cudaMemcpyPeerAsync(dst, p.b, src, p.a, kBytes, s); });
    const double floor = p.nvlink ? kNvlinkFloor : kPcieFloor;
    checks.push_back({"p2p-copy", gbs >= floor ? Verdict::kOk : Verdict::kWarn,
                      "GPU " + std::to_string(p.a) + " to GPU " + std::to_string(p.b) + ": " + rate(gbs) +
                          (p.nvlink ? " over NVLink" : " over PCIe") +
                          (gbs >= floor ? "" : " (below " + rate(floor) + ": the link is not what the driver says)")});
  }
  for (int d = 0; d < n; ++d) {
    (void)cudaSetDevice(d);
    (void)cudaFree(buffers[static_cast<std::size_t>(d)]);
  }
  return checks;
}

#else

std::vector<Check> measureLinks(const topology::Topology& /*t*/) { return {}; }

#endif

}  // namespace braid::tools
