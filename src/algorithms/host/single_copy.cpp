#include "algorithms/host/single_copy.hpp"

#include <cstring>

#include "base/error.hpp"
#include "base/logging.hpp"

namespace braid::host {

namespace {

// What a rank publishes in its slot in the first round.
struct Offer {
  std::uint64_t address;
  std::uint64_t pidNamespace;
  std::int32_t pid;
  std::uint32_t willing;
};

// How long a failing rank waits for thread ranks of its process still copying from its buffer: a copy of the largest
// block (8 MiB) from each of 255 peers takes well under it.
constexpr double kLingerSeconds = 2.0;

}  // namespace

// A rank whose call fails while its peers may still copy from its buffer returns early (aborted, timed out, a peer
// lost), and its program may free the buffer. A peer in another process that still reads it gets an error from the
// kernel, but a thread rank of this process copies with memcpy: give those the moment their copies take. (Peers in
// other processes are not waited for: one that fails too would hold this rank's error back.)
void SingleCopy::leave(RoundSync& sync, std::uint32_t offerRound, ErrorCode code) {
  sync.announceBroken(code);
  const transport::ProcessIdentity& me = transport::thisProcess();
  bool threadRanks = false;
  for (int peer = 0; peer < sync.size(); ++peer) {
    if (peer == sync.rank()) continue;
    Offer theirs{};
    std::memcpy(&theirs, sync.slotOf(peer, offerRound), sizeof theirs);
    threadRanks = threadRanks || transport::ProcessIdentity{theirs.pid, theirs.pidNamespace} == me;
  }
  if (threadRanks) sync.lingerForPeers(offerRound, kLingerSeconds);
}

SingleCopy::SingleCopy(RoundSync& sync, State& state, bool willing, const void* exposed) : sync_(sync), state_(state) {
  const transport::ProcessIdentity& me = transport::thisProcess();
  const Offer mine{reinterpret_cast<std::uintptr_t>(exposed), me.pidNamespace, me.pid, willing && state.on ? 1u : 0u};
  std::memcpy(sync.nextSlot(), &mine, sizeof mine);
  sync.expectRead(0, sizeof(Offer));
  const std::uint32_t offerRound = sync.round() + 1;
  try {
    sync.exchange();
  } catch (const Error& e) {
    // Peers that saw every rank arrive copy from this rank's buffer though this rank stops here. (A Mismatch fails
    // every rank in this round: none reads.)
    if (mine.willing != 0 && e.code() != ErrorCode::kMismatch) leave(sync, offerRound, e.code());
    throw;
  }
  // A rank that failed this round once this one arrived (aborted, timed out waiting for another) may return without
  // waiting for copies it did not see coming: it is read by no one.
  sync.confirmPeersWhole();
  const auto n = static_cast<std::size_t>(sync.size());
  state.owners.resize(n);
  state.addresses.resize(n);
  active_ = true;
  for (int peer = 0; peer < sync.size(); ++peer) {
    Offer theirs{};
    std::memcpy(&theirs, sync.slot(peer), sizeof theirs);
    active_ = active_ && theirs.willing != 0;
    state.owners[peer] = transport::ProcessIdentity{theirs.pid, theirs.pidNamespace};
    state.addresses[peer] = theirs.address;
  }
}

void SingleCopy::read(int peer, std::size_t offset, void* out, std::size_t bytes) {
  if (bytes == 0 || failed_.load(std::memory_order_relaxed)) return;
  std::string why;
  if (state_.read(state_.owners[peer], state_.addresses[peer] + offset, out, bytes, &why)) return;
  if (!whyTaken_.test_and_set()) why_ = strCat("reading peer ", peer, "'s buffer: ", why);
  failed_.store(true, std::memory_order_release);
}

bool SingleCopy::finish() {
  const std::uint32_t mine = failed_.load(std::memory_order_acquire) ? 0u : 1u;
  std::memcpy(sync_.nextSlot(), &mine, sizeof mine);
  sync_.expectRead(0, sizeof mine);
  const std::uint32_t offerRound = sync_.round();
  try {
    sync_.exchange();
  } catch (const Error& e) {
    leave(sync_, offerRound, e.code());
    throw;
  }
  bool all = true;
  int refusedBy = -1;
  for (int peer = 0; peer < sync_.size(); ++peer) {
    std::uint32_t theirs = 0;
    std::memcpy(&theirs, sync_.slot(peer), sizeof theirs);
    if (theirs == 0 && refusedBy < 0) refusedBy = peer;
    all = all && theirs != 0;
  }
  if (all) return true;
  state_.on = false;
  logLine(LogLevel::kInfo, sync_.rank(),
          strCat("collectives over shared memory copy through the slots from now on: ",
                 why_.empty() ? strCat("rank ", refusedBy, " could not read its peers' memory") : why_));
  return false;
}

}  // namespace braid::host
