// Fed point-to-point groups (algorithms/p2p_feed.hpp): on the progress thread a point-to-point call on host
// buffers runs with a feed, and the point-to-point calls queued directly behind it join it while it runs. Each call
// finishes when its own operations are done, so isend-then-recv patterns between ranks progress as they do under
// MPI and Gloo. A collective on host buffers queued behind the group runs inside it (P2pFeed::interleave), its waits
// moving the group's messages, so that irecv, allreduce, send completes on both ranks; point-to-point calls queued
// behind that collective join the group after it ran, so calls never pass a collective.
//
// Timeouts: while the group holds its first call alone, the engine's own deadline applies (its error says how far
// each operation got). Once another call joins, every call keeps its own deadline, checked between the engine's
// sleeps, and the engine's is lifted: the first call's deadline must not end a call that joined much later.
// A failure of the group's operations ends the whole group: every call in it fails with the error (over TCP the
// ranks' streams are out of step after one anyway). A collective run inside it fails on its own, as anywhere, and so
// does a receive that took a message of another size (Mismatch, as MPI's truncation error): the message went
// through, and the group goes on.
//
// Calls that cannot meet: a call that does not run inside the group (one on the device engine or on a CUDA stream)
// waits for it, so when a peer the group still waits for has begun that call, or waits for it behind point-to-point
// calls of its own (each rank publishes that in its progress word), the peer has posted every call it will post
// before it, and what the group waits for from it comes after: neither rank can move. The group fails with Mismatch
// once that has held for a grace period in which none of its bytes moved (a large message that flows is no
// deadlock, however long it takes), instead of waiting out the timeout, and the communicator breaks, since the pair's
// messages may have moved in part.
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/p2p_feed.hpp"
#include "base/data_type.hpp"
#include "base/error.hpp"
#include "core/communicator_impl.hpp"
#include "core/work_state.hpp"
#include "transport/progress.hpp"

namespace braid::core {

namespace {

// How long a peer must stay in the collective queued behind the group while the group waits for it: far longer
// than any message already on its way takes to arrive (a socket's or ring's worth), far shorter than a timeout.
constexpr std::chrono::milliseconds kCannotMeetAfter{2000};

/// "receive from peer 2 (tag 7, 400 bytes)", for errors.
std::string describe(const P2pOp& op) {
  const std::string peer = op.peer == kAnySource ? "any source" : strCat("peer ", op.peer);
  return strCat(op.kind == P2pOp::Kind::kSend ? "send to " : "receive from ", peer, " (tag ", op.tag, ", ",
                op.count * dataTypeSize(op.type), " bytes)");
}

}  // namespace

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
    for (std::size_t i = 0; i < n; ++i) {
      const P2pOp& op = (*task.p2p)[i];
      if (op.peer != c_.rank_) waitingOn_.emplace(next_ + i, op);
    }
    const Deadline deadline = Deadline::after(c_.makeEnv(task.op, -1, task.opts).timeoutSeconds);
    members_.emplace(next_, Member{std::move(task), n, deadline});
    next_ += n;
  }

  bool posted() const override { return c_.queuedForGroup_.load(std::memory_order_acquire); }

  void interleave(FunctionRef<void()> keepMoving) override {
    if (!posted()) return;
    while (true) {
      std::optional<Task> task;
      {
        std::lock_guard lock(c_.mu_);
        if (c_.queue_.empty() || !c_.queue_.front().interleaves()) break;
        task.emplace(std::move(c_.queue_.front()));
        c_.queue_.pop_front();
        c_.noteStarted(*task);
        if (c_.queue_.empty()) c_.gate_.fetch_and(~CommunicatorImpl::kQueued, std::memory_order_acq_rel);
      }
      // As the progress loop runs it, except that its waits move the group's messages too. A failure ends it as it
      // would anyway (its Work holds the error), and breaks the communicator where it leaves the ranks out of step.
      c_.execute(*task, false, keepMoving);
    }
    c_.throwIfBroken(env_.context);
  }

  void moved() override { moved_ = true; }

  bool take(std::vector<P2pOp>& ops) override {
    if (!posted()) return false;
    std::vector<Task> joining;
    {
      std::lock_guard lock(c_.mu_);
      c_.queuedForGroup_.store(false, std::memory_order_relaxed);
      while (!c_.queue_.empty() && c_.queue_.front().p2p) {
        joining.push_back(std::move(c_.queue_.front()));
        c_.queue_.pop_front();
        c_.noteStarted(joining.back());
      }
      // A collective queued since interleave() looked: the next look runs it.
      if (!c_.queue_.empty() && c_.queue_.front().interleaves()) {
        c_.queuedForGroup_.store(true, std::memory_order_relaxed);
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

  void completed(std::size_t index) override { done(index, nullptr); }

  void failed(std::size_t index, const Error& error) override { done(index, &error); }

  /// The group's env.check, between the engine's sleeps.
  void check() {
    checkDeadlines();
    checkCanMeet();
  }

  /// Whether the group failed because its calls and a peer's could not meet (the communicator must break).
  bool cannotMeet() const { return cannotMeet_; }

 private:
  /// A member's call ends once all its operations are done, with the first error one of them failed with.
  void done(std::size_t index, const Error* error) {
    waitingOn_.erase(index);
    auto it = members_.upper_bound(index);
    if (it == members_.begin()) return;  // not a member's: cannot happen, and must not crash
    --it;
    Member& member = it->second;
    if (error != nullptr && !member.failure) member.failure = *error;
    if (--member.remaining > 0) return;
    Task task = std::move(member.task);
    const std::optional<Error> failure = std::move(member.failure);
    members_.erase(it);
    if (failure) c_.noteFailure(*failure);  // as a call that runs alone: the flight record shows what each called
    c_.noteEnded(task.record, -1, failure ? &*failure : nullptr);
    task.work->finish(failure ? std::make_exception_ptr(*failure) : nullptr);
  }

  /// Timeout for the first member past its own deadline, once members joined.
  void checkDeadlines() const {
    if (!joined_) return;
    for (const auto& [first, member] : members_) {
      if (!member.deadline.expired()) continue;
      const std::vector<P2pOp>& ops = *member.task.p2p;
      ErrorContext ctx = env_.context;
      ctx.peer = ops.front().peer;
      std::string what;
      for (std::size_t i = 0; i < ops.size() && i < 4; ++i) {
        what += strCat(i ? ", " : "", describe(ops[i]));
      }
      if (ops.size() > 4) what += strCat(" and ", ops.size() - 4, " more");
      fail(ErrorCode::kTimeout, ctx, "a point-to-point call (", what,
           ") did not complete within its timeout (BRAID_TIMEOUT or the call's) while later ones progressed; its ",
           "peer may not have posted the matching operation");
    }
  }

  /// Mismatch when a peer this group waits for has begun the collective queued behind it, or waits for it behind
  /// point-to-point calls of its own (the file's comment), for kCannotMeetAfter. Publishes the second state for the
  /// peers.
  void checkCanMeet() {
    std::int64_t seq = -1;
    const char* op = nullptr;
    std::vector<transport::PeerProgress> peers;
    if (!waitingOn_.empty() && (c_.gate_.load(std::memory_order_acquire) & CommunicatorImpl::kQueued) != 0) {
      {
        std::lock_guard lock(c_.mu_);
        if (!c_.queue_.empty() && !c_.queue_.front().p2p && !c_.queue_.front().interleaves()) {
          seq = c_.queue_.front().seq;
          op = c_.queue_.front().op;
        }
      }
      if (seq >= 0) {
        // Every collective before it has ended on this rank: calls run in issue order.
        if (publishedBehind_ != seq) {
          c_.engines_.host().publishProgress(transport::Progress{seq - 1, false, true});
          publishedBehind_ = seq;
        }
        peers = c_.engines_.host().peerProgress();
      }
    }
    // The peers stuck so, and those of them that broke (their own check fired first: they make no more calls, so
    // there is no need to wait out the grace, and the answer must come before their leaving reads as PeerLost).
    std::vector<bool> stuck(static_cast<std::size_t>(c_.size_), false);
    std::vector<bool> broke(static_cast<std::size_t>(c_.size_), false);
    int stuckPeers = 0;
    for (const transport::PeerProgress& p : peers) {
      const transport::Progress& at = p.progress;
      const bool inIt = at.seq == seq && at.running;
      const bool behindToo = at.seq == seq - 1 && at.behindPointToPoint;
      const bool seen = stuckSince_ && stuckSeq_ == seq && at.seq <= seq &&
                        (stuckPeer_ == p.peer || (stuckPeer_ == kAnySource && stuckBefore_[p.peer]));
      broke[p.peer] = (inIt || behindToo || seen) && !c_.engines_.host().peerBroke(p.peer).empty();
      stuck[p.peer] = inIt || behindToo || broke[p.peer];
      stuckPeers += stuck[p.peer] ? 1 : 0;
    }
    // The first operation waiting on a stuck peer; a receive from any source waits on all of them.
    int peer = -1;
    bool found = false;
    const P2pOp* waiting = nullptr;
    bool sure = false;  // no grace needed
    for (const auto& [index, pending] : waitingOn_) {
      // (Only with a collective queued: a rank alone has no peers, and its any-source receive may yet meet its own
      // send.)
      if (pending.peer == kAnySource ? seq >= 0 && stuckPeers == c_.size_ - 1 : stuck[pending.peer]) {
        peer = pending.peer;
        waiting = &pending;
        sure = pending.peer == kAnySource ? std::find(broke.begin(), broke.end(), true) != broke.end()
                                          : static_cast<bool>(broke[pending.peer]);
        found = true;
        break;
      }
    }
    stuckBefore_ = std::move(stuck);
    // Bytes that moved since the last look: the peers are there, so start over (a large message flowing between two
    // ranks that both queued the collective behind it takes as long as it takes).
    const bool moved = std::exchange(moved_, false);
    if (!found || moved) {
      stuckSince_.reset();
      if (!found) return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!stuckSince_ || stuckPeer_ != peer || stuckSeq_ != seq) {
      stuckSince_ = now;
      stuckPeer_ = peer;
      stuckSeq_ = seq;
      return;
    }
    if (!sure && now - *stuckSince_ < kCannotMeetAfter) return;
    cannotMeet_ = true;
    ErrorContext ctx = env_.context;
    ctx.peer = peer;
    fail(ErrorCode::kMismatch, ctx, "this rank's ", describe(*waiting), " cannot complete: collective #", seq, " (", op,
         "), posted after it here on device buffers or a stream, waits for it, and ",
         peer == kAnySource ? "every peer" : strCat("peer ", peer),
         " has reached that collective with its matching call not posted before it, so that call comes ",
         "after the collective. A collective on device buffers or a stream waits for the point-to-point calls on host ",
         "buffers posted before it: post the matching calls before it on both ranks, or give point-to-point traffic ",
         "a communicator of its own (torch: dist.new_group)");
  }

 public:
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
    std::optional<Error> failure = {};  // the first of its operations' own failures
  };

  CommunicatorImpl& c_;
  OpEnv& env_;
  std::map<std::size_t, Member> members_;   // by the index of their first operation
  std::map<std::size_t, P2pOp> waitingOn_;  // the operations with a peer not yet completed, by index
  std::size_t next_ = 0;                    // the index the next member's first operation takes
  bool joined_ = false;                     // a call joined the first
  // checkCanMeet: since when, which peer and which queued collective have looked stuck.
  std::optional<std::chrono::steady_clock::time_point> stuckSince_;
  int stuckPeer_ = -1;
  std::int64_t stuckSeq_ = -1;
  std::vector<bool> stuckBefore_;      // the peers stuck at the last look (for a receive from any source)
  std::int64_t publishedBehind_ = -1;  // the collective this rank last told its peers it waits for behind the group
  bool moved_ = false;  // the engine moved bytes since checkCanMeet last looked (moved(); the engine's thread)
  bool cannotMeet_ = false;
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
  env.check = [&feed] { feed.check(); };
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
    if (feed.cannotMeet()) breakWith(told);
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
