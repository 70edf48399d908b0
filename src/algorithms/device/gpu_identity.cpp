// A GPU's identity as ranks trade it at creation (device_engine_factory.hpp): its UUID, the same in every process
// and whatever CUDA_VISIBLE_DEVICES renumbers.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "algorithms/device/device_engine_factory.hpp"

namespace braid::device {

std::string gpuIdentity(int device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
    cudaGetLastError();  // no device is an answer here, not an error for the next CUDA call to find
    return "";
  }
  if (device < 0 && cudaGetDevice(&device) != cudaSuccess) return "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return "";
  char text[2 * sizeof prop.uuid.bytes + 1] = {};
  for (std::size_t i = 0; i < sizeof prop.uuid.bytes; ++i) {
    std::snprintf(text + 2 * i, 3, "%02x", static_cast<unsigned char>(prop.uuid.bytes[i]));
  }
  return text;
}

}  // namespace braid::device
