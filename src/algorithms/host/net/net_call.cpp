#include "algorithms/host/net/net_call.hpp"

#include <functional>
#include <span>
#include <vector>

namespace braid::host {

NetCall::NetCall(transport::NetTransport& net, const transport::CallDescriptor& call, const OpEnv& env, long spinMicros,
                 transport::MessageKind kind)
    : net_(net), call_(call), kind_(kind), env_(env) {
  policy_.spinMicros = spinMicros;
  policy_.yieldWhileSpinning = env.yieldWhileSpinning;
  policy_.timeoutSeconds = env.timeoutSeconds;
  policy_.deadline = &env.deadline;
  policy_.check = FunctionRef<void()>::to<&NetCall::checkWait>(this);
}

void NetCall::checkWait() { checkCall(env_); }

NetCall::~NetCall() {
  std::vector<transport::NetOp*> pending;
  for (auto& op : ops_) {
    if (op.state.load(std::memory_order_acquire) == transport::NetOp::kPending) pending.push_back(&op);
  }
  if (!pending.empty()) net_.cancel(pending);
}

transport::NetOp& NetCall::make(transport::NetOp::Dir dir, int peer, std::uint32_t step, const void* data,
                                std::size_t bytes, std::int64_t key) {
  transport::NetOp& op = ops_.emplace_back();
  op.dir = dir;
  op.peer = peer;
  op.kind = kind_;
  op.key = key;
  op.step = step;
  op.call = kind_ == transport::MessageKind::kCollective ? call_ : transport::CallDescriptor{};
  op.data = static_cast<std::byte*>(const_cast<void*>(data));
  op.bytes = bytes;
  op.region = net_.regionOf(data, bytes);  // the algorithms pass pointers; the regions are the transport's to know
  net_.post(op);
  return op;
}

transport::NetOp& NetCall::send(int peer, std::uint32_t step, const void* data, std::size_t bytes, std::int64_t key) {
  return make(transport::NetOp::Dir::kSend, peer, step, data, bytes, key);
}

transport::NetOp& NetCall::recv(int peer, std::uint32_t step, void* data, std::size_t bytes, std::int64_t key) {
  return make(transport::NetOp::Dir::kRecv, peer, step, data, bytes, key);
}

void NetCall::wait(transport::NetOp& op) {
  transport::NetOp* one[] = {&op};
  net_.wait(one, env_.context, policy_);
}

void NetCall::waitAll() {
  // Only what was posted since the last waitAll: a windowed call posts thousands of messages and waits at the end of
  // each window; looking at all of them every time would make the call quadratic in its windows.
  std::vector<transport::NetOp*> all;
  all.reserve(ops_.size() - settled_);
  for (std::size_t i = settled_; i < ops_.size(); ++i) all.push_back(&ops_[i]);
  net_.wait(all, env_.context, policy_);
  settled_ = ops_.size();
}

void NetCall::waitAny(std::span<transport::NetOp* const> ops, const std::function<bool()>& interrupted) {
  net_.waitAny(ops, interrupted, env_.context, policy_);
}

void NetCall::forgetDone(const std::function<bool(const transport::NetOp&)>& released) {
  // A done op is the transport's no more (a send is done once its bytes are in the kernel, a receive once they landed).
  while (!ops_.empty() && ops_.front().state.load(std::memory_order_acquire) == transport::NetOp::kDone &&
         released(ops_.front())) {
    ops_.pop_front();
    if (settled_ > 0) --settled_;
  }
}

}  // namespace braid::host
