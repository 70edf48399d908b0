// BRAID_CUDA_TIMELINE=1: every collective kernel of a communicator between two CUDA events, and a log line per
// kernel once it ended (its GPU time, and how long the stream sat idle before it started). Where a call's time
// goes when the host says one thing and the GPU another: a kernel that waits long for its peer shows a long GPU
// time, a host that issues late shows idle time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

namespace braid::device {

class KernelTimeline {
 public:
  explicit KernelTimeline(int rank) : rank_(rank) {}
  ~KernelTimeline();
  KernelTimeline(const KernelTimeline&) = delete;
  KernelTimeline& operator=(const KernelTimeline&) = delete;

  /// Around one kernel launch on `stream` (not while the stream is being captured into a graph).
  void before(cudaStream_t stream);
  void after(cudaStream_t stream, std::string what);
  /// Logs the kernels that ended, oldest first; never waits.
  void report();

 private:
  struct Entry {
    cudaEvent_t start;
    cudaEvent_t stop;
    cudaStream_t stream;
    std::string what;
  };
  cudaEvent_t take();
  void give(cudaEvent_t e);
  void logEntry(const Entry& e);

  const int rank_;
  std::deque<Entry> pending_;
  std::vector<cudaEvent_t> free_;
  cudaEvent_t start_ = nullptr;  // of the launch between before() and after()
  Entry last_{};                 // the last kernel reported: its stop starts the next one's idle time
  bool haveLast_ = false;
  long long count_ = 0;
};

}  // namespace braid::device
