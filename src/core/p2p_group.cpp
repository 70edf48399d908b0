// Fed point-to-point groups (algorithms/p2p_feed.hpp): on the progress thread a point-to-point call on host
// buffers runs with a feed, and the point-to-point calls queued directly behind it join it while it runs. Each call
// finishes when its own operations are done, so isend-then-recv patterns between ranks progress as they do under
// MPI and Gloo. A collective queued behind the group still waits for it: calls never pass a collective.
//
// Timeouts: while the group holds its first call alone, the engine's own deadline applies (its error says how far
// each operation got). Once another call joins, every call keeps its own deadline, checked between the engine's
// sleeps, and the engine's is lifted: the first call's deadline must not end a call that joined much later.
// A failure ends the whole group: every call in it fails with the error (over TCP the ranks' streams are out of
// step after one anyway).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/p2p_feed.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "core/communicator_impl.hpp"
#include "core/work_state.hpp"

namespace braid::core {

class CommunicatorImpl::GroupFeed final : public P2pFeed {
 public:
  GroupFeed(CommunicatorImpl& c, OpEnv& env) : c_(c), env_(env) {}
  GroupFeed(const GroupFeed&) = delete;
  GroupFeed& operator=(const GroupFeed&) = delete;

  /// Makes `task` a member, its operations the next indices (appended to `ops` unless it is the first, whose
  /// operations the engine was given). A task of no operations is done at once.
  void admit(Task task, std::vector<P2pOp>* ops) {
    const std::size_t n = task.p2p->size();
    if (n == 0) {
      c_.noteEnded(task.record, -1, nullptr);
      task.work->finish(nullptr);
      return;
    }
    if (ops) ops->insert(ops->end(), task.p2p->begin(), task.p2p->end());
    const Deadline deadline = Deadline::after(c_.makeEnv(task.op, -1, task.opts).timeoutSeconds);
    members_.emplace(next_, Member{std::move(task), n, deadline});
    next_ += n;
  }

  bool posted() const override { return c_.p2pQueued_.load(std::memory_order_acquire); }

  bool take(std::vector<P2pOp>& ops) override {
    if (!posted()) return false;
    std::vector<Task> joining;
    {
      std::lock_guard lock(c_.mu_);
      c_.p2pQueued_.store(false, std::memory_order_relaxed);
      while (!c_.queue_.empty() && c_.queue_.front().p2p) {
        joining.push_back(std::move(c_.queue_.front()));
        c_.queue_.pop_front();
        c_.noteStarted(joining.back());
      }
      if (c_.queue_.empty()) c_.gate_.fetch_and(~CommunicatorImpl::kQueued, std::memory_order_acq_rel);
    }
    const std::size_t before = ops.size();
    for (Task& task : joining) {
      try {
        c_.throwIfBroken(env_.context);
      } catch (const Error& e) {
        c_.noteEnded(task.record, -1, &e);
        task.work->finish(std::current_exception());
        continue;
      }
      if (!joined_) {
        joined_ = true;
        env_.deadline = Deadline::never();  // from now on each member's own (checkDeadlines)
      }
      admit(std::move(task), &ops);
    }
    return ops.size() > before;
  }

  void completed(std::size_t index) override {
    auto it = members_.upper_bound(index);
    if (it == members_.begin()) return;  // not a member's: cannot happen, and must not crash
    --it;
    if (--it->second.remaining > 0) return;
    Task task = std::move(it->second.task);
    members_.erase(it);
    c_.noteEnded(task.record, -1, nullptr);
    task.work->finish(nullptr);
  }

  /// The group's env.check: Timeout for the first member past its own deadline, once members joined.
  void checkDeadlines() const {
    if (!joined_) return;
    for (const auto& [first, member] : members_) {
      if (!member.deadline.expired()) continue;
      const std::vector<P2pOp>& ops = *member.task.p2p;
      ErrorContext ctx = env_.context;
      ctx.peer = ops.front().peer;
      std::string what;
      for (std::size_t i = 0; i < ops.size() && i < 4; ++i) {
        what += strCat(i ? ", " : "", ops[i].kind == P2pOp::Kind::kSend ? "send to peer " : "receive from peer ",
                       ops[i].peer, " (tag ", ops[i].tag, ", ", ops[i].count * dataTypeSize(ops[i].type), " bytes)");
      }
      if (ops.size() > 4) what += strCat(" and ", ops.size() - 4, " more");
      fail(ErrorCode::kTimeout, ctx, "a point-to-point call (", what,
           ") did not complete within its timeout (BRAID_TIMEOUT or the call's) while later ones progressed; its ",
           "peer may not have posted the matching operation");
    }
  }

  /// The group failed: every member still running fails with `error`.
  void failAll(const Error& error) {
    const std::exception_ptr thrown = std::make_exception_ptr(error);
    for (auto& [first, member] : members_) {
      c_.noteEnded(member.task.record, -1, &error);
      member.task.work->finish(thrown);
    }
    members_.clear();
  }

  /// After the engine returned: members whose operations it never reported (an engine without feeds would leave
  /// joined ones; ours report every one) end with an internal error rather than never.
  void finishRest() {
    if (!members_.empty()) {
      failAll(Error(ErrorCode::kInternal, "the engine ended a point-to-point group before these operations completed",
                    env_.context));
    }
  }

 private:
  struct Member {
    Task task;
    std::size_t remaining;  // operations not yet completed
    Deadline deadline;
  };

  CommunicatorImpl& c_;
  OpEnv& env_;
  std::map<std::size_t, Member> members_;  // by the index of their first operation
  std::size_t next_ = 0;                   // the index the next member's first operation takes
  bool joined_ = false;                    // a call joined the first
};

void CommunicatorImpl::executeGroup(Task& first) {
  OpEnv env = makeEnv(first.op, -1, first.opts);
  try {
    throwIfBroken(env.context);
  } catch (const Error& e) {
    noteEnded(first.record, -1, &e);
    first.work->finish(std::current_exception());
    return;
  }
  GroupFeed feed(*this, env);
  env.feed = &feed;
  env.check = [&feed] { feed.checkDeadlines(); };
  const std::shared_ptr<const std::vector<P2pOp>> ops = first.p2p;
  feed.admit(std::move(first), nullptr);
  groupRunning_.store(true, std::memory_order_seq_cst);
  struct Stopped {
    std::atomic<bool>& flag;
    ~Stopped() { flag.store(false, std::memory_order_seq_cst); }
  } stopped{groupRunning_};
  try {
    engineFor(Route{}, env).pointToPoint(*ops, env);
  } catch (const Error& e) {
    // The communicator is marked broken before the waiters wake (as execute does), so that their next call sees it.
    const Error told = withPeerProgress(e);
    noteFailure(told);
    feed.failAll(told);
    return;
  } catch (...) {
    const Error unexpected(ErrorCode::kInternal, "unexpected exception", env.context);
    noteFailure(unexpected);
    feed.failAll(unexpected);
    return;
  }
  feed.finishRest();
}

}  // namespace braid::core
