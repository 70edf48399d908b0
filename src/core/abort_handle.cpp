// AbortHandle: a flag creation waits look at, and the communicator it was used to make.
#include "braid/braid.hpp"
#include "core/communicator_impl.hpp"

namespace braid {

void AbortHandle::abort() {
  aborted_.store(true, std::memory_order_release);
  std::lock_guard lock(mu_);
  if (comm_) comm_->abort();
}

void AbortHandle::attach(core::CommunicatorImpl* comm) {
  std::lock_guard lock(mu_);
  comm_ = comm;
  if (comm_ && aborted()) comm_->abort();
}

}  // namespace braid
