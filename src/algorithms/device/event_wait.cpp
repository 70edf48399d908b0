#include "algorithms/device/event_wait.hpp"

#include <chrono>
#include <thread>

#include "base/deadline.hpp"
#include "base/error.hpp"
#include "cuda/runtime/cuda_check.hpp"

namespace braid::device {

void waitForEvent(cudaEvent_t event, const host::OpEnv& env, const char* what) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const auto spin = std::chrono::microseconds(env.spinMicros);
  const Deadline deadline = Deadline::after(env.timeoutSeconds);
  for (unsigned polls = 0;; ++polls) {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) cuda::checkCuda(status, strCat("cudaEventQuery(", what, ")").c_str());
    if (polls % 16 != 15) continue;
    host::checkCall(env);
    if (deadline.expired()) {
      fail(ErrorCode::kTimeout, env.context, what, " on the GPU took more than ", env.timeoutSeconds, " s");
    }
    if (Clock::now() - start > spin) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace braid::device
