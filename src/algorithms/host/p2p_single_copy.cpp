// Point-to-point single copy (p2p.hpp): the word through which a receiver claims and answers a large message and
// its sender withdraws it, the receiver's read, and the failing sender's withdrawal.
#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <thread>

#include "algorithms/host/p2p.hpp"
#include "base/logging.hpp"
#include "transport/process_memory.hpp"

namespace braid::host {

namespace {

// A single-copy message's word (LocalFabric::singleCopyAnswer): the ticket of the message it speaks of, times eight,
// plus where that message stands. Tickets count from 1, so the zeroed word speaks of none; they wrap at 2^29. The
// receiver claims a message before it reads it and answers once done; a sender that fails first withdraws it, and
// whoever changes the word first decides: a withdrawn message is read by no one, a claimed one is waited for.
constexpr std::uint32_t kTicketMask = 0x1fffffffu;
constexpr std::uint32_t kClaimed = 0;      // another process reads it, through the kernel
constexpr std::uint32_t kRead = 1;         // read whole (or dropped unread by a receive of another size)
constexpr std::uint32_t kRefused = 2;      // not read, and no payload follows: the sender sends it again, in the ring
constexpr std::uint32_t kWithdrawn = 3;    // its send failed: no one reads it, and no payload follows
constexpr std::uint32_t kClaimedHere = 4;  // a thread rank of the sender's process copies it with memcpy
// How long a failing sender waits for another process that claimed its message to finish reading it. That reader
// gets an error from the kernel, not a fault, where the program freed the buffer meanwhile, and its answer then finds
// the message withdrawn: the wait only spares it a failed receive. (A thread rank's memcpy is waited for whole.)
constexpr double kLingerSeconds = 2.0;

std::uint32_t ticketOf(std::uint32_t word) { return word >> 3; }
std::uint32_t standingOf(std::uint32_t word) { return word & 7u; }
std::uint32_t wordOf(std::uint32_t ticket, std::uint32_t standing) { return ticket << 3 | standing; }
bool claimed(std::uint32_t word) { return standingOf(word) == kClaimed || standingOf(word) == kClaimedHere; }
// Whether `ticket` is `of` or later, in wrap-around order.
bool atOrAfter(std::uint32_t ticket, std::uint32_t of) { return ((ticket - of) & kTicketMask) < (kTicketMask >> 1); }

}  // namespace

bool P2pEngine::singleCopyTo(int peer, std::uint64_t bytes) const {
  // Only what cannot sit in the ring: a smaller message completes once written, whether or not the peer reads yet
  // (two ranks that each send one and then receive rely on that).
  return singleCopy_ && !refusedBy_[peer] && peer != fabric_.rank() && bytes > fabric_.layout().ringBytes;
}

void P2pEngine::askSingleCopy(const P2pOp& op, Header& h, Pending& s) {
  const transport::ProcessIdentity& me = transport::thisProcess();
  h.address = reinterpret_cast<std::uintptr_t>(op.buffer);
  h.pidNamespace = me.pidNamespace;
  h.pid = me.pid;
  s.awaitingAnswer = true;
  s.ticket = ++asked_[op.peer] & kTicketMask;
}

P2pEngine::Answer P2pEngine::answerTo(int peer, const Pending& s) {
  const std::uint32_t word = fabric_.singleCopyAnswer(fabric_.rank(), peer).load(std::memory_order_acquire);
  if (ticketOf(word) != s.ticket || claimed(word)) return Answer::kNone;
  return standingOf(word) == kRefused ? Answer::kRefused : Answer::kRead;
}

P2pEngine::Copied P2pEngine::readSingleCopy(int peer, const Header& h, Incoming& in) {
  const std::uint32_t ticket = ++answered_[peer] & kTicketMask;
  std::atomic<std::uint32_t>& word = fabric_.singleCopyAnswer(peer, fabric_.rank());
  const transport::ProcessIdentity owner{h.pid, h.pidNamespace};
  const bool here = owner == transport::thisProcess();
  // The word speaks of the sender's previous message until this rank claims this one, unless the sender withdrew it
  // (or withdrew it and later ones: it asks again only once a message is decided).
  std::uint32_t seen = word.load(std::memory_order_acquire);
  do {
    if (atOrAfter(ticketOf(seen), ticket)) return Copied::kWithdrawn;
  } while (!word.compare_exchange_weak(seen, wordOf(ticket, here ? kClaimedHere : kClaimed), std::memory_order_acq_rel,
                                       std::memory_order_acquire));
  // From the claim to the answer nothing may throw: the sender waits for the answer of a thread rank without end.
  // A receive of another size reads nothing (it fails with Mismatch once the message is through); the sender's send is
  // done all the same, as it is when its bytes cross the ring.
  std::string why;
  bool read = in.target == nullptr;
  if (!read && singleCopy_) {
    try {
      read = transport::readProcessMemory(owner, h.address, in.target, in.bytes, &why);
    } catch (const std::exception& e) {
      why = e.what();
    }
  } else if (!read) {
    why = "this rank reads no peer's memory";
  }
  // Once answered, the sender's buffer is its program's again. A sender in another process that gave up waiting
  // withdrew the message meanwhile: what was read cannot be trusted.
  std::uint32_t mine = wordOf(ticket, here ? kClaimedHere : kClaimed);
  const bool answered = word.compare_exchange_strong(mine, wordOf(ticket, read ? kRead : kRefused),
                                                     std::memory_order_acq_rel, std::memory_order_acquire);
  fabric_.ring(peer);
  if (!answered) return Copied::kWithdrawn;
  if (!read) {
    logLine(LogLevel::kDebug, fabric_.rank(),
            strCat("large messages from peer ", peer, " cross the shared-memory ring: ", why));
    return Copied::kRefused;
  }
  in.done = in.bytes;
  return Copied::kRead;
}

void P2pEngine::withdrawUnanswered() noexcept {
  for (std::size_t i = 0; i < ops_.size() && i < state_.size(); ++i) {
    if (!state_[i].awaitingAnswer) continue;
    state_[i].awaitingAnswer = false;
    const std::uint32_t ticket = state_[i].ticket;
    std::atomic<std::uint32_t>& word = fabric_.singleCopyAnswer(fabric_.rank(), ops_[i].peer);
    std::uint32_t seen = word.load(std::memory_order_acquire);
    // Not claimed yet: the receiver will find it withdrawn and read nothing.
    bool decided = false;
    while (ticketOf(seen) != ticket && !decided) {
      decided = word.compare_exchange_weak(seen, wordOf(ticket, kWithdrawn), std::memory_order_acq_rel,
                                           std::memory_order_acquire);
    }
    if (decided || !claimed(seen)) continue;
    // Claimed: the receiver is reading the buffer. A thread rank's memcpy is waited for whatever the time (it always
    // ends, and the memory it reads must outlive it, whatever the peer's state: an aborted rank may still copy);
    // another process's read for kLingerSeconds, then withdrawn under it.
    const auto start = std::chrono::steady_clock::now();
    const auto until = start + std::chrono::duration<double>(kLingerSeconds);
    while (claimed(seen)) {
      const auto now = std::chrono::steady_clock::now();
      if (standingOf(seen) == kClaimed && now >= until) {
        if (word.compare_exchange_strong(seen, wordOf(ticket, kWithdrawn), std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
          break;
        }
        continue;
      }
      if (now - start < std::chrono::milliseconds(1)) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      seen = word.load(std::memory_order_acquire);
    }
  }
}

}  // namespace braid::host
