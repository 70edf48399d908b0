#include "algorithms/device/kernel_timeline.hpp"

#include <cstdio>

#include "base/error.hpp"
#include "base/logging.hpp"

namespace braid::device {

namespace {

// A log line per kernel is the point; but a caller that never comes back (no later call, no destructor) must not
// hold events without bound.
constexpr std::size_t kMostPending = 4096;

}  // namespace

KernelTimeline::~KernelTimeline() {
  for (const Entry& e : pending_) {
    if (cudaEventSynchronize(e.stop) == cudaSuccess) logEntry(e);
    (void)cudaEventDestroy(e.start);
    (void)cudaEventDestroy(e.stop);
  }
  if (haveLast_) {
    (void)cudaEventDestroy(last_.start);
    (void)cudaEventDestroy(last_.stop);
  }
  if (start_ != nullptr) (void)cudaEventDestroy(start_);
  for (cudaEvent_t e : free_) (void)cudaEventDestroy(e);
  (void)cudaGetLastError();
}

cudaEvent_t KernelTimeline::take() {
  if (!free_.empty()) {
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  if (cudaEventCreate(&e) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return e;
}

void KernelTimeline::give(cudaEvent_t e) {
  if (e != nullptr) free_.push_back(e);
}

void KernelTimeline::before(cudaStream_t stream) {
  report();
  if (pending_.size() >= kMostPending) return;
  start_ = take();
  if (start_ != nullptr && cudaEventRecord(start_, stream) != cudaSuccess) {
    (void)cudaGetLastError();
    give(start_);
    start_ = nullptr;
  }
}

void KernelTimeline::after(cudaStream_t stream, std::string what) {
  if (start_ == nullptr) return;
  cudaEvent_t stop = take();
  if (stop == nullptr || cudaEventRecord(stop, stream) != cudaSuccess) {
    (void)cudaGetLastError();
    give(start_);
    give(stop);
    start_ = nullptr;
    return;
  }
  pending_.push_back({start_, stop, stream, std::move(what)});
  start_ = nullptr;
}

void KernelTimeline::report() {
  while (!pending_.empty()) {
    const cudaError_t status = cudaEventQuery(pending_.front().stop);
    if (status == cudaErrorNotReady) return;
    Entry e = pending_.front();
    pending_.pop_front();
    if (status == cudaSuccess) {
      logEntry(e);
    } else {
      (void)cudaGetLastError();
    }
    if (haveLast_) {
      give(last_.start);
      give(last_.stop);
    }
    last_ = e;
    haveLast_ = true;
  }
}

void KernelTimeline::logEntry(const Entry& e) {
  float gpuMs = 0;
  if (cudaEventElapsedTime(&gpuMs, e.start, e.stop) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  std::string idle = "first timed kernel";
  float idleMs = 0;
  if (haveLast_ && last_.stream == e.stream && cudaEventElapsedTime(&idleMs, last_.stop, e.start) == cudaSuccess) {
    char text[64];
    std::snprintf(text, sizeof text, "stream idle %.1f us before it", idleMs * 1e3);
    idle = text;
  } else {
    (void)cudaGetLastError();
    if (haveLast_) idle = "another stream than the kernel before";
  }
  char gpu[32];
  std::snprintf(gpu, sizeof gpu, "%.1f us", gpuMs * 1e3);
  logLine(LogLevel::kInfo, rank_, strCat("timeline #", ++count_, ": ", e.what, ": GPU ", gpu, ", ", idle));
}

}  // namespace braid::device
