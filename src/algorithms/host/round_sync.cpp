#include "algorithms/host/round_sync.hpp"

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "base/data_type.hpp"
#include "base/error.hpp"

namespace braid::host {

std::string describeInWords(const transport::RoundDescriptor& d) {
  const auto c = static_cast<Collective>(d.collective);
  if (c == Collective::kRejected) return "a call whose arguments it rejected";
  std::string s = strCat(collectiveName(c), " #", d.seq, " (", dataTypeName(static_cast<DataType>(d.dataType)),
                         ", count ", d.count);
  if (c == Collective::kAllreduce || c == Collective::kReduce || c == Collective::kReduceScatter) {
    s += strCat(", ", reduceKindName(static_cast<ReduceKind>(d.reduceKind)));
  }
  if (d.root >= 0) s += strCat(", root ", d.root);
  if (d.shapeHash != 0) s += strCat(", counts hash ", std::hex, d.shapeHash);
  return s + ")";
}

namespace {

const auto describe = describeInWords;

}  // namespace

std::string RoundSync::whyStopped(int peer, int& named) {
  named = peer;
  if (fabric_.peerBrokenIn(peer)) {
    // Its call failed because of another peer: one that failed outright is the cause, whatever `peer` did since
    // (its process may have exited on the error).
    for (int p = 0; p < fabric_.size(); ++p) {
      if (p == fabric_.rank() || p == peer || fabric_.peerLeft(p) || fabric_.peerBrokenIn(p)) continue;
      std::string why = fabric_.peerFailure(p);
      if (!why.empty()) {
        named = p;
        return why;
      }
    }
    return fabric_.peerBroke(peer);
  }
  return fabric_.peerFailure(peer);
}

void RoundSync::checkWait() {
  checkCall(env_);
  int named = waitingFor_;
  const std::string why = whyStopped(waitingFor_, named);
  if (!why.empty()) {
    ErrorContext ctx = env_.context;
    ctx.peer = named;
    fail(ErrorCode::kPeerLost, ctx, why, " while this rank waited for peer ", waitingFor_, " in round ", round_ + 1);
  }
}

void RoundSync::failTimedOut() {
  ErrorContext ctx = env_.context;
  ctx.peer = waitingFor_;
  fail(ErrorCode::kTimeout, ctx, "peer ", waitingFor_, " did not reach round ", round_ + 1, " of this call within ",
       "the timeout (BRAID_TIMEOUT or the call's timeout); it may be in another call or stuck");
}

void RoundSync::exchange() {
  const std::uint32_t next = round_ + 1;
  if (!checked_) fabric_.publishDescriptor(next, call_);
  // The arrival's store drains while this rank looks at its peers' lines; peers asleep on it are woken once all
  // arrived (a peer sleeps only after it arrived itself, so none waits on another to be woken), or on the way out
  // of a failed wait.
  fabric_.arriveQuietly(next);
  try {
    for (int peer = 0; peer < fabric_.size(); ++peer) {
      if (peer != fabric_.rank()) waitFor(peer);
    }
  } catch (...) {
    fabric_.wakeArrivalSleepers(next);
    throw;
  }
  fabric_.wakeArrivalSleepers(next);
  round_ = next;
  expectBytes_ = 0;
  checkPeersWhole();
  if (!checked_) {
    checked_ = true;
    checkDescriptors();
  }
}

void RoundSync::lingerForPeers(std::uint32_t from, double seconds) const noexcept {
  const std::uint32_t target = from + 1;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  try {
    // A round's line holds the latest round of its parity the peer arrived at. Copies begin once every rank reached
    // `from`: while one has not, none copies (and the others, waiting in that round, would not arrive at the next).
    for (int peer = 0; peer < fabric_.size(); ++peer) {
      if (peer != fabric_.rank() &&
          !transport::reached(fabric_.roundLine(peer, from).arrived.value.load(std::memory_order_acquire), from)) {
        return;
      }
    }
    for (int peer = 0; peer < fabric_.size(); ++peer) {
      if (peer == fabric_.rank()) continue;
      const transport::WaitWord& arrived = fabric_.roundLine(peer, target).arrived;
      while (!transport::reached(arrived.value.load(std::memory_order_acquire), target) &&
             fabric_.peerFailure(peer).empty() && fabric_.peerBroke(peer).empty() &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): a peer's state that cannot be read ends the wait, as time does
  }
}

void RoundSync::announceBroken(ErrorCode code) noexcept {
  fabric_.markBroken(call_.seq, code);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void RoundSync::confirmPeersWhole() {
  // This rank's arrival, then the fence, then the peers' flags; a failing peer's flag, its fence, then whether this
  // rank arrived (lingerForPeers). One of the two sees the other's store: this rank fails here, or that peer waits
  // for its copies.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  checkPeersWhole();
  for (int peer = 0; peer < fabric_.size(); ++peer) {
    if (!fabric_.peerStopped(peer)) continue;
    // None can have left or broken in a later call: it would have passed a round after this one.
    int named = peer;
    const std::string why = whyStopped(peer, named);
    ErrorContext ctx = env_.context;
    ctx.peer = named;
    fail(ErrorCode::kPeerLost, ctx, why.empty() ? strCat("peer ", peer, " stopped its communicator") : why,
         " (found in round ", round_, " of this call, before reading its buffer)");
  }
}

void RoundSync::waitFor(int peer) {
  const std::uint32_t target = round_ + 1;
  waitingFor_ = peer;
  transport::WaitWord& arrived = fabric_.roundLine(peer, target).arrived;
  if (expectBytes_ == 0 || (expectPeer_ >= 0 && expectPeer_ != peer)) {
    transport::waitUntil(
        arrived, [target](std::uint32_t v) { return transport::reached(v, target); }, policy_);
    return;
  }
  // Each poll also asks for the lines this rank reads next. Before the peer wrote them the requests hit this core's
  // stale copies; once it did, they travel beside the counter's line. A peer that arrived already gets its lines
  // asked for once, and they come while this rank looks at the next peer.
  // Every line the read touches, from the one that holds its first byte (slots start on a page).
  const std::byte* slot = fabric_.slot(peer, target);
  const std::byte* first = slot + expectOffset_ / 64 * 64;
  const std::byte* end = slot + expectOffset_ + expectBytes_;
  transport::waitUntil(
      arrived,
      [target, first, end](std::uint32_t v) {
        for (const std::byte* line = first; line < end; line += 64) __builtin_prefetch(line, /*rw=*/0, /*locality=*/3);
        return transport::reached(v, target);
      },
      policy_);
}

void RoundSync::checkPeersWhole() {
  // A peer may arrive and then fail the call (a timeout waiting for this rank) and break: this rank must not go on
  // to finish the call that peer failed. Checked before this round's slots are read, so where the first round finds
  // it this rank's output is left as it was. A peer that broke in a later call finished this one (it passed this
  // round, which every rank had reached): that is no reason to fail it.
  for (int peer = 0; peer < fabric_.size(); ++peer) {
    const std::optional<std::int64_t> in = fabric_.peerBrokenIn(peer);
    if (!in || (*in >= 0 && call_.seq >= 0 && *in > call_.seq)) continue;
    // Where the peer broke because another failed outright (aborted, exited, went silent), that one is the cause to
    // name, as a rank that saw it first does.
    int named = peer;
    std::string why = whyStopped(peer, named);
    ErrorContext ctx = env_.context;
    ctx.peer = named;
    if (why.empty()) why = strCat("peer ", peer, " broke its communicator");  // and left since
    fail(ErrorCode::kPeerLost, ctx, why, " (found in round ", round_, " of this call)");
  }
}

void RoundSync::checkDescriptors() {
  for (int peer = 0; peer < fabric_.size(); ++peer) {
    // The packed forms decide (every field, the counts' hash where the call has one); unpacked only to name both.
    if (peer == fabric_.rank() || fabric_.publishedSameCall(peer, round_)) continue;
    ErrorContext ctx = env_.context;
    ctx.peer = peer;
    fail(ErrorCode::kMismatch, ctx, "this rank called ", describe(call_), " but peer ", peer, " called ",
         describe(fabric_.descriptor(peer, round_)));
  }
}

}  // namespace braid::host
