// The floor of a device call's host cost: an empty kernel launched back to back with cuLaunchKernel on its driver
// handle, as braid launches its own collective kernels.
#include <cuda.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "bench/empty_launch.hpp"

namespace braid::bench {

namespace {

__global__ void emptyKernel() {}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

double emptyLaunchMicros(cudaStream_t stream, int launches) {
  cudaFunction_t function = nullptr;
  check(cudaGetFuncBySymbol(&function, reinterpret_cast<const void*>(emptyKernel)), "cudaGetFuncBySymbol");
  // cuLaunchKernel through the runtime's entry point lookup, as braid finds it: no libcuda to link against.
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  check(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &address, 12000, cudaEnableDefault, &found),
        "cudaGetDriverEntryPointByVersion(cuLaunchKernel)");
  if (found != cudaDriverEntryPointSuccess || address == nullptr) {
    throw std::runtime_error("the CUDA driver has no cuLaunchKernel");
  }
  const auto launchKernel = reinterpret_cast<decltype(&::cuLaunchKernel)>(address);
  auto launch = [&] {
    const CUresult r = launchKernel(reinterpret_cast<CUfunction>(function), 1, 1, 1, 32, 1, 1, 0,
                                    reinterpret_cast<CUstream>(stream), nullptr, nullptr);
    if (r != CUDA_SUCCESS) throw std::runtime_error("cuLaunchKernel(empty) failed: CUresult " + std::to_string(r));
  };
  for (int i = 0; i < 100; ++i) launch();
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(empty)");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) launch();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(empty)");
  return us / launches;
}

}  // namespace braid::bench
