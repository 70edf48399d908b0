#include "requests.hpp"

#include <cuda_runtime_api.h>
#include <sched.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "support.hpp"

namespace braid::mpi {

namespace {

struct Pending {
  cudaEvent_t gpuDone = nullptr;    // a collective's GPU work (a generalized request)
  std::vector<unsigned char> host;  // a send's or receive's host copy
  void* device = nullptr;           // a receive's destination
};

std::mutex mu;
std::unordered_map<MPI_Request, Pending> pending;
std::atomic<int> count{0};  // pending.size(), read without the lock on every Wait/Test

int queryStatus(void*, MPI_Status* status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}
int freeState(void*) { return MPI_SUCCESS; }
int cancelWork(void*, int) { return MPI_SUCCESS; }

bool anyPending() { return count.load(std::memory_order_acquire) != 0; }

// Completes the collectives among `requests` whose GPU work ended (waiting for it when `block`); true when one of
// them is still running.
bool progress(const MPI_Request* requests, int n, bool block) {
  bool running = false;
  for (int i = 0; i < n; ++i) {
    cudaEvent_t event = nullptr;
    {
      std::lock_guard lock(mu);
      auto it = pending.find(requests[i]);
      if (it == pending.end() || it->second.gpuDone == nullptr) continue;
      event = it->second.gpuDone;
    }
    const cudaError_t state = block ? cudaEventSynchronize(event) : cudaEventQuery(event);
    if (state == cudaErrorNotReady) {
      running = true;
      continue;
    }
    (void)cudaEventDestroy(event);
    {
      std::lock_guard lock(mu);
      pending.erase(requests[i]);
      count.store(static_cast<int>(pending.size()), std::memory_order_release);
    }
    PMPI_Grequest_complete(requests[i]);
  }
  return running;
}

// After MPI reported `original` (the handle before the call) complete: a staged receive's bytes go to the GPU.
void completed(MPI_Request original) {
  Pending done;
  {
    std::lock_guard lock(mu);
    auto it = pending.find(original);
    if (it == pending.end()) return;
    done = std::move(it->second);
    pending.erase(it);
    count.store(static_cast<int>(pending.size()), std::memory_order_release);
  }
  if (done.device != nullptr && !done.host.empty()) {
    checkCuda(cudaMemcpy(done.device, done.host.data(), done.host.size(), cudaMemcpyHostToDevice),
              "cudaMemcpy(received bytes to the GPU)");
  }
}

std::vector<MPI_Request> copyOf(const MPI_Request* requests, int n) { return {requests, requests + n}; }

}  // namespace

MPI_Request gpuWorkRequest() {
  cudaEvent_t event = nullptr;
  checkCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  checkCuda(cudaEventRecord(event, nullptr), "cudaEventRecord");
  MPI_Request request = MPI_REQUEST_NULL;
  checkMpi(PMPI_Grequest_start(queryStatus, freeState, cancelWork, nullptr, &request), "PMPI_Grequest_start");
  std::lock_guard lock(mu);
  pending[request].gpuDone = event;
  count.store(static_cast<int>(pending.size()), std::memory_order_release);
  return request;
}

void stagedRequest(MPI_Request request, std::vector<unsigned char> host, void* device) {
  std::lock_guard lock(mu);
  Pending& p = pending[request];
  p.host = std::move(host);
  p.device = device;
  count.store(static_cast<int>(pending.size()), std::memory_order_release);
}

}  // namespace braid::mpi

using braid::mpi::anyPending;
using braid::mpi::completed;
using braid::mpi::copyOf;
using braid::mpi::progress;

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (!anyPending()) return PMPI_Wait(request, status);
  const MPI_Request original = *request;
  progress(request, 1, true);
  const int rc = PMPI_Wait(request, status);
  if (rc == MPI_SUCCESS) completed(original);
  return rc;
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (!anyPending()) return PMPI_Test(request, flag, status);
  const MPI_Request original = *request;
  progress(request, 1, false);
  const int rc = PMPI_Test(request, flag, status);
  if (rc == MPI_SUCCESS && *flag != 0) completed(original);
  return rc;
}

int MPI_Waitall(int n, MPI_Request requests[], MPI_Status statuses[]) {
  if (!anyPending()) return PMPI_Waitall(n, requests, statuses);
  const auto originals = copyOf(requests, n);
  progress(requests, n, true);
  const int rc = PMPI_Waitall(n, requests, statuses);
  if (rc == MPI_SUCCESS) {
    for (MPI_Request r : originals) completed(r);
  }
  return rc;
}

int MPI_Testall(int n, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (!anyPending()) return PMPI_Testall(n, requests, flag, statuses);
  const auto originals = copyOf(requests, n);
  progress(requests, n, false);
  const int rc = PMPI_Testall(n, requests, flag, statuses);
  if (rc == MPI_SUCCESS && *flag != 0) {
    for (MPI_Request r : originals) completed(r);
  }
  return rc;
}

int MPI_Testany(int n, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (!anyPending()) return PMPI_Testany(n, requests, index, flag, status);
  const auto originals = copyOf(requests, n);
  progress(requests, n, false);
  const int rc = PMPI_Testany(n, requests, index, flag, status);
  if (rc == MPI_SUCCESS && *flag != 0 && *index != MPI_UNDEFINED)
    completed(originals[static_cast<std::size_t>(*index)]);
  return rc;
}

// A collective's request completes only when the interposer sees its GPU work end, so with one among them the
// wait tests in turn (yielding the core between rounds) instead of blocking in the MPI.
int MPI_Waitany(int n, MPI_Request requests[], int* index, MPI_Status* status) {
  if (!anyPending()) return PMPI_Waitany(n, requests, index, status);
  for (;;) {
    int flag = 0;
    const int rc = MPI_Testany(n, requests, index, &flag, status);
    if (rc != MPI_SUCCESS || flag != 0) return rc;
    sched_yield();
  }
}

int MPI_Testsome(int n, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!anyPending()) return PMPI_Testsome(n, requests, outcount, indices, statuses);
  const auto originals = copyOf(requests, n);
  progress(requests, n, false);
  const int rc = PMPI_Testsome(n, requests, outcount, indices, statuses);
  if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED) {
    for (int i = 0; i < *outcount; ++i) completed(originals[static_cast<std::size_t>(indices[i])]);
  }
  return rc;
}

int MPI_Waitsome(int n, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!anyPending()) return PMPI_Waitsome(n, requests, outcount, indices, statuses);
  for (;;) {
    const int rc = MPI_Testsome(n, requests, outcount, indices, statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;
    sched_yield();
  }
}

int MPI_Request_free(MPI_Request* request) {
  if (!anyPending()) return PMPI_Request_free(request);
  // One of the interposer's: finished here (a receive's bytes must reach the GPU), then freed by the wait.
  const MPI_Request original = *request;
  bool ours = false;
  {
    std::lock_guard lock(braid::mpi::mu);
    ours = braid::mpi::pending.count(original) != 0;
  }
  if (!ours) return PMPI_Request_free(request);
  return MPI_Wait(request, MPI_STATUS_IGNORE);
}

}  // extern "C"
