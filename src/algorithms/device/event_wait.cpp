#include "algorithms/device/event_wait.hpp"

#include <chrono>
#include <thread>

#include "base/deadline.hpp"
#include "base/error.hpp"
#include "cuda/runtime/cuda_check.hpp"

namespace braid::device {

void waitForEvent(cudaEvent_t event, const OpEnv& env, const char* what) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start{};  // read at the first check, not before: a wait answered at once reads no clock
  for (unsigned polls = 1;; ++polls) {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) cuda::checkCuda(status, strCat("cudaEventQuery(", what, ")").c_str());
    if (polls % 16 != 0) continue;
    checkCall(env);
    const Clock::time_point now = Clock::now();
    if (start == Clock::time_point{}) start = now;
    // The call's deadline, shared with its other waits (OpEnv::deadline), as transport::waitUntil does.
    if (!env.deadline) env.deadline = Deadline::after(env.timeoutSeconds);
    if (env.deadline->expired()) {
      fail(ErrorCode::kTimeout, env.context, what, " on the GPU did not finish within the call's ", env.timeoutSeconds,
           " s");
    }
    if (now - start > std::chrono::microseconds(env.spinMicros))
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace braid::device
