#include "support.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

namespace braid::mpi {

bool onGpu(const void* p) { return p != nullptr && p != MPI_IN_PLACE && memoryOf(p) != Memory::kHost; }

bool gpuOnly(std::initializer_list<const void*> buffers) {
  return std::all_of(buffers.begin(), buffers.end(),
                     [](const void* p) { return p == nullptr || p == MPI_IN_PLACE || onGpu(p); });
}

namespace {

// The MPI error code braid's failures are raised with; its string is the last failure's message.
int braidErrorCode() {
  static const int code = [] {
    int errorClass = MPI_ERR_OTHER;
    int c = MPI_ERR_OTHER;
    if (PMPI_Add_error_class(&errorClass) == MPI_SUCCESS) PMPI_Add_error_code(errorClass, &c);
    return c;
  }();
  return code;
}

}  // namespace

int guarded(MPI_Comm comm, const char* call, const std::function<void()>& body) {
  try {
    body();
    return MPI_SUCCESS;
  } catch (const std::exception& e) {
    const std::string text = std::string(call) + " on GPU buffers (braid): " + e.what();
    static std::mutex mu;
    std::lock_guard lock(mu);
    const int code = braidErrorCode();
    PMPI_Add_error_string(code, text.c_str());
    std::fprintf(stderr, "%s\n", text.c_str());
    PMPI_Comm_call_errhandler(comm, code);
    return code;
  }
}

void checkCuda(int status, const char* what) {
  const auto s = static_cast<cudaError_t>(status);
  if (s != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(s));
}

void finishGpuWork() { checkCuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize"); }

std::size_t spanOf(MPI_Datatype type, int count) {
  if (count <= 0) return 0;
  MPI_Aint lb = 0;
  MPI_Aint extent = 0;
  MPI_Aint trueLb = 0;
  MPI_Aint trueExtent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  PMPI_Type_get_true_extent(type, &trueLb, &trueExtent);
  if (trueLb < 0) throw std::runtime_error("a datatype with a negative lower bound cannot be staged");
  return static_cast<std::size_t>(trueLb + trueExtent + static_cast<MPI_Aint>(count - 1) * extent);
}

std::size_t spanOf(MPI_Datatype type, const int* counts, const int* displs, int n) {
  int end = 0;
  for (int i = 0; i < n; ++i) {
    if (counts[i] > 0) end = std::max(end, displs[i] + counts[i]);
  }
  return spanOf(type, end);
}

void stagedOnce(const char* call) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard lock(mu);
  if (!said.insert(call).second) return;
  const char* level = std::getenv("BRAID_LOG");
  if (level != nullptr && (std::string(level) == "info" || std::string(level) == "debug")) {
    std::fprintf(stderr, "braid_mpi: %s on GPU buffers staged through host memory and the MPI's own call\n", call);
  }
}

void checkMpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string(what) + " failed (MPI error " + std::to_string(rc) + ")");
}

int commSize(MPI_Comm comm) {
  int n = 0;
  PMPI_Comm_size(comm, &n);
  return n;
}

int commRank(MPI_Comm comm) {
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}

HostCopy::HostCopy(const void* buffer, std::size_t bytes) : buffer_(buffer) {
  if (buffer == nullptr || buffer == MPI_IN_PLACE || bytes == 0) return;
  host_.resize(bytes);
  checkCuda(cudaMemcpy(host_.data(), buffer, bytes, cudaMemcpyDefault), "cudaMemcpy(stage)");
}

void HostCopy::writeBack() {
  if (host_.empty()) return;
  checkCuda(cudaMemcpy(const_cast<void*>(buffer_), host_.data(), host_.size(), cudaMemcpyDefault),
            "cudaMemcpy(unstage)");
}

}  // namespace braid::mpi
