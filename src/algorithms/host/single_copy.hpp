// Data-movement collectives in one copy. Through the slots a byte is copied twice (into the sender's slot, out of it
// into the receiver's output) and a large call takes a round per slot. Where the kernel lets a rank read its peers'
// memory (transport/process_memory.hpp), the same call is two rounds whatever its size: in the first every rank
// publishes where its buffer lies, then each copies what it needs straight from its peers' buffers into its output,
// and in the second every rank says whether all its reads succeeded. A rank's buffer is its program's again only once
// that round is over, since peers read it until then.
//
// Every rank of the call takes part or none does: a rank declines (single copy turned off where it runs, or an
// in-place alltoall, whose buffer is overwritten while peers still read it), and the call runs through the slots
// instead. Where a read fails (the kernel's ptrace rules, a container's seccomp profile, another pid namespace), every
// rank learns so in the second round, the call is run again through the slots, and the engine's later calls go there
// too: every rank draws the same conclusion from the same round.
//
// A rank whose call fails after it published its buffer (aborted, timed out, a peer lost) waits, a bounded moment,
// for thread ranks of its process that may be copying from it to arrive at the round after: its program may free
// the buffer once the call returns, and they copy with memcpy, which the kernel does not check. It tells its peers
// it broke before it looks for them, so a peer that completes the first round after it looked finds it broken there
// (or aborted) and reads nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/host/round_sync.hpp"
#include "transport/process_memory.hpp"

namespace braid::host {

class SingleCopy {
 public:
  /// How a rank reads a peer's memory: transport::readProcessMemory (tests count or refuse the reads).
  using Reader = std::function<bool(const transport::ProcessIdentity& owner, std::uint64_t address, void* out,
                                    std::size_t bytes, std::string* why)>;

  /// One per engine.
  struct State {
    Reader read = transport::readProcessMemory;
    bool on = true;  // whether calls go on taking part: cleared for good, on every rank alike, once a read failed
    std::vector<transport::ProcessIdentity> owners;  // per peer, of the call in progress (kept: no allocation a call)
    std::vector<std::uint64_t> addresses;
  };

  /// Holds the call's first round (its descriptor check included): publishes `exposed`, the buffer this rank's peers
  /// read, and whether this rank takes part (`willing`, and the engine's state).
  SingleCopy(RoundSync& sync, State& state, bool willing, const void* exposed);

  /// Every rank takes part: read(), then finish().
  bool active() const { return active_; }
  /// Copies `bytes` from `offset` past `peer`'s exposed buffer into `out`; any thread. A failed read is remembered
  /// for finish(); what it left in `out` is overwritten by the call's run through the slots.
  void read(int peer, std::size_t offset, void* out, std::size_t bytes);
  /// The closing round. True where every rank read everything: the call is done. False: run it through the slots.
  bool finish();

 private:
  /// The call failed with `code` after this rank published its buffer in `offerRound`: tells the peers it broke, then
  /// lingers for thread ranks that may be copying from it.
  static void leave(RoundSync& sync, std::uint32_t offerRound, ErrorCode code);

  RoundSync& sync_;
  State& state_;
  bool active_ = false;
  std::atomic<bool> failed_{false};
  std::string why_;  // the first failed read's reason, for the log
  std::atomic_flag whyTaken_ = ATOMIC_FLAG_INIT;
};

}  // namespace braid::host
