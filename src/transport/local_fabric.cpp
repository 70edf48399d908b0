#include "transport/local_fabric.hpp"

#include <bit>
#include <cstring>

#include "base/error.hpp"

namespace braid::transport {

namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kLine = 64;
// Control block offsets: the two round lines (one per round parity) open the region, at 0.
constexpr std::size_t kDoorbellOffset = 2 * sizeof(RoundLine);
// The heartbeat shares the doorbell's line: it is written once a heartbeat interval, too rarely to disturb it.
constexpr std::size_t kHeartbeatOffset = kDoorbellOffset + 32;
constexpr std::size_t kAbortOffset = kDoorbellOffset + 40;
// Beside it, for a rank whose communicator broke: the error code and the call it broke in, written before the flag.
constexpr std::size_t kBrokenCodeOffset = kDoorbellOffset + 44;
constexpr std::size_t kBrokenSeqOffset = kDoorbellOffset + 48;
constexpr std::size_t kHeadsOffset = kDoorbellOffset + kLine;

std::size_t roundUp(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

std::size_t tailsOffset(int size) { return kHeadsOffset + static_cast<std::size_t>(size) * kLine; }
// Its own line: written twice a call by its owner, read by peers only for a flight record.
std::size_t progressOffset(int size) { return tailsOffset(size) + static_cast<std::size_t>(size) * kLine; }

}  // namespace

FabricLayout FabricLayout::compute(int size, std::size_t slotBytes, std::size_t ringBytes) {
  if (size < 1) fail(ErrorCode::kInvalidArgument, {}, "local group size ", size, " must be at least 1");
  FabricLayout l;
  l.size = size;
  l.slotBytes = roundUp(slotBytes < kPage ? kPage : slotBytes, kPage);
  l.ringBytes = std::bit_ceil(ringBytes < kPage ? kPage : ringBytes);
  if (l.ringBytes > (std::size_t{1} << 30))
    fail(ErrorCode::kInvalidArgument, {}, "ring of ", ringBytes, " bytes is too large");
  const std::size_t control = roundUp(progressOffset(size) + kLine, kPage);
  l.slotOffset = control;
  l.ringOffset = l.slotOffset + 2 * l.slotBytes;
  l.regionBytes = l.ringOffset + static_cast<std::size_t>(size) * l.ringBytes;
  return l;
}

LocalFabric::LocalFabric(std::unique_ptr<LocalGroup> group, const FabricLayout& layout)
    : group_(std::move(group)), layout_(layout), rank_(group_->rank()), size_(group_->size()) {
  if (group_->regionBytes() < layout_.regionBytes) {
    fail(ErrorCode::kInternal, {}, "region of ", group_->regionBytes(), " bytes cannot hold the layout's ",
         layout_.regionBytes);
  }
  for (int peer = 0; peer < size_; ++peer) regions_.push_back(group_->region(peer));
  for (int peer = 0; peer < size_; ++peer) {
    abortFlags_.push_back(reinterpret_cast<std::atomic<std::uint32_t>*>(regions_[peer] + kAbortOffset));
  }
  myProgress_ = &progressWord(rank_);
  // Rings start empty; a fabric made over a region already in use (none is) would start from its tails.
  for (int peer = 0; peer < size_; ++peer) {
    knownTails_.push_back(ringTail(rank_, peer).value.load(std::memory_order_acquire));
  }
}

WaitWord& LocalFabric::word(int peer, std::size_t offset) {
  return *reinterpret_cast<WaitWord*>(regions_[peer] + offset);
}

void LocalFabric::publishDescriptor(std::uint32_t round, const RoundDescriptor& call) {
  RoundLine& line = roundLine(rank_, round);
  line.call = PackedCall{call.seq,
                         call.count,
                         call.root,
                         static_cast<std::uint8_t>(call.collective),
                         static_cast<std::uint8_t>(call.dataType),
                         static_cast<std::uint8_t>(call.reduceKind),
                         static_cast<std::uint8_t>(call.shapeHash != 0 ? 1 : 0)};
  if (call.shapeHash != 0) std::memcpy(line.payload, &call.shapeHash, sizeof call.shapeHash);
}

RoundDescriptor LocalFabric::descriptor(int peer, std::uint32_t round) {
  const RoundLine& line = roundLine(peer, round);
  RoundDescriptor d;
  d.seq = line.call.seq;
  d.count = line.call.count;
  d.root = line.call.root;
  d.collective = line.call.collective;
  d.dataType = line.call.dataType;
  d.reduceKind = line.call.reduceKind;
  if (line.call.shaped != 0) std::memcpy(&d.shapeHash, line.payload, sizeof d.shapeHash);
  return d;
}

bool LocalFabric::publishedSameCall(int peer, std::uint32_t round) {
  const RoundLine& mine = roundLine(rank_, round);
  const RoundLine& theirs = roundLine(peer, round);
  // PackedCall has no padding: equal bytes are equal fields. Its shaped flag says whether the payload's first 8
  // bytes are the shape hash (compared too) or data.
  if (std::memcmp(&mine.call, &theirs.call, sizeof(PackedCall)) != 0) return false;
  return mine.call.shaped == 0 || std::memcmp(mine.payload, theirs.payload, sizeof(std::uint64_t)) == 0;
}

WaitWord& LocalFabric::doorbell(int peer) { return word(peer, kDoorbellOffset); }

std::atomic<std::uint32_t>& LocalFabric::heartbeat(int peer) {
  return *reinterpret_cast<std::atomic<std::uint32_t>*>(regions_[peer] + kHeartbeatOffset);
}

LocalFabric::~LocalFabric() {
  // Whatever a peer still needs of this rank's finished calls is in place already: a peer waiting for more from it
  // learns at once that nothing more comes, as TCP's goodbye tells it, instead of at its heartbeat timeout.
  if (group_ == nullptr || regions_.empty()) return;
  std::uint32_t none = 0;  // an abort or a break said first stays what peers read
  if (!abortFlag(rank_).compare_exchange_strong(none, kLeft, std::memory_order_release)) return;
  for (int p = 0; p < size_; ++p) bump(doorbell(p));
}

void LocalFabric::markAborted() {
  abortFlag(rank_).store(kAborted, std::memory_order_release);
  // Peers asleep on their doorbells or round counters wake within a sleep slice (~20 ms) and look.
  for (int p = 0; p < size_; ++p) bump(doorbell(p));
}

void LocalFabric::markBroken(std::int64_t seq, ErrorCode code) {
  std::byte* mine = regions_[rank_];
  reinterpret_cast<std::atomic<std::uint32_t>*>(mine + kBrokenCodeOffset)
      ->store(static_cast<std::uint32_t>(code), std::memory_order_relaxed);
  reinterpret_cast<std::atomic<std::int64_t>*>(mine + kBrokenSeqOffset)->store(seq, std::memory_order_relaxed);
  std::uint32_t none = 0;  // an abort said first stays what peers read
  if (!abortFlag(rank_).compare_exchange_strong(none, kBroken, std::memory_order_release)) return;
  for (int p = 0; p < size_; ++p) bump(doorbell(p));
}

bool LocalFabric::peerLeft(int peer) {
  return peer != rank_ && abortFlag(peer).load(std::memory_order_acquire) == kLeft;
}

bool LocalFabric::peerStopped(int peer) {
  return peer != rank_ && abortFlag(peer).load(std::memory_order_acquire) != 0;
}

std::string LocalFabric::peerBroke(int peer) {
  if (peer == rank_ || abortFlag(peer).load(std::memory_order_acquire) != kBroken) return "";
  const std::byte* theirs = regions_[peer];
  const auto code =
      reinterpret_cast<const std::atomic<std::uint32_t>*>(theirs + kBrokenCodeOffset)->load(std::memory_order_relaxed);
  const std::int64_t seq =
      reinterpret_cast<const std::atomic<std::int64_t>*>(theirs + kBrokenSeqOffset)->load(std::memory_order_relaxed);
  std::string call = seq >= 0 ? strCat("collective #", seq) : std::string("a point-to-point call");
  return strCat("peer ", peer, " failed ", call, " with ", errorCodeName(static_cast<ErrorCode>(code)),
                " and can take part in no later call (its error says why)");
}

std::int64_t LocalFabric::brokenSeq(int peer) const {
  return reinterpret_cast<const std::atomic<std::int64_t>*>(regions_[peer] + kBrokenSeqOffset)
      ->load(std::memory_order_relaxed);
}

std::atomic<std::int64_t>& LocalFabric::progressWord(int peer) {
  return *reinterpret_cast<std::atomic<std::int64_t>*>(regions_[peer] + progressOffset(size_));
}

std::vector<PeerProgress> LocalFabric::peerProgress() {
  std::vector<PeerProgress> out;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    // A region starts zeroed: word 0 is "no call begun yet".
    out.push_back(PeerProgress{p, Progress::fromWord(progressWord(p).load(std::memory_order_relaxed)), 0.0});
  }
  return out;
}

void LocalFabric::beat() { heartbeat(rank_).fetch_add(1, std::memory_order_relaxed); }

std::string LocalFabric::peerFailure(int peer) {
  if (peer == rank_) return "";
  const std::uint32_t flag = abortFlag(peer).load(std::memory_order_acquire);
  if (flag == kAborted) return strCat("peer ", peer, " aborted its communicator");
  if (flag == kLeft) return strCat("peer ", peer, " destroyed its communicator");
  if (!group_->peerAlive(peer)) return strCat("peer ", peer, "'s process exited");
  if (heartbeatTimeout_ <= 0) return "";
  const std::lock_guard lock(seenMu_);
  const auto now = std::chrono::steady_clock::now();
  if (seen_.empty()) seen_.assign(static_cast<std::size_t>(size_), Seen{0, now});
  Seen& s = seen_[static_cast<std::size_t>(peer)];
  const std::uint32_t value = heartbeat(peer).load(std::memory_order_relaxed);
  if (value != s.value || s.at == std::chrono::steady_clock::time_point{}) {
    s = Seen{value, now};
    return "";
  }
  const double still = std::chrono::duration<double>(now - s.at).count();
  if (still <= heartbeatTimeout_) return "";
  return strCat("peer ", peer, " sent no heartbeat for ", static_cast<long>(still), " s (BRAID_HEARTBEAT_TIMEOUT ",
                heartbeatTimeout_, " s): its process is stopped, frozen or starved");
}
WaitWord& LocalFabric::ringHead(int sender, int receiver) {
  return word(sender, kHeadsOffset + static_cast<std::size_t>(receiver) * kLine);
}
WaitWord& LocalFabric::ringTail(int sender, int receiver) {
  return word(receiver, tailsOffset(size_) + static_cast<std::size_t>(sender) * kLine);
}
std::byte* LocalFabric::ringData(int sender, int receiver) {
  return regions_[sender] + layout_.ringOffset + static_cast<std::size_t>(receiver) * layout_.ringBytes;
}

std::atomic<std::uint32_t>& LocalFabric::singleCopyAnswer(int sender, int receiver) {
  // The tail's line, after its WaitWord: the receiver writes both (the sender this word only when it withdraws a
  // message, which is rare), and the sender reads them.
  return *reinterpret_cast<std::atomic<std::uint32_t>*>(reinterpret_cast<std::byte*>(&ringTail(sender, receiver)) +
                                                        sizeof(WaitWord));
}

void LocalFabric::ring(int peer) { bump(doorbell(peer)); }

std::size_t LocalFabric::ringWrite(int peer, const void* data, std::size_t len) {
  return ringWrite(peer, nullptr, 0, data, len);
}

std::size_t LocalFabric::ringWrite(int peer, const void* whole, std::size_t wholeLen, const void* data,
                                   std::size_t len) {
  const std::uint32_t head = ringHead(rank_, peer).value.load(std::memory_order_relaxed);  // only we write it
  const std::size_t free = ringFree(peer, wholeLen + len);
  if (free < wholeLen) return 0;
  const std::size_t n = len < free - wholeLen ? len : free - wholeLen;
  if (wholeLen + n == 0) return 0;
  std::byte* base = ringData(rank_, peer);
  const auto copyIn = [&](std::size_t offset, const void* from, std::size_t count) {
    const std::size_t at = (head + offset) & (layout_.ringBytes - 1);
    const std::size_t first = count < layout_.ringBytes - at ? count : layout_.ringBytes - at;
    std::memcpy(base + at, from, first);
    std::memcpy(base, static_cast<const std::byte*>(from) + first, count - first);
  };
  if (wholeLen > 0) copyIn(0, whole, wholeLen);
  if (n > 0) copyIn(wholeLen, data, n);
  ringHead(rank_, peer).value.store(head + static_cast<std::uint32_t>(wholeLen + n), std::memory_order_release);
  ring(peer);
  return n;
}

std::size_t LocalFabric::ringFree(int peer, std::size_t wanted) {
  // From the tail as last read while that shows room enough: the tail's line is the receiver's, written at every
  // read, and reading it at every write would move it between the two cores each message.
  const std::uint32_t head = ringHead(rank_, peer).value.load(std::memory_order_relaxed);
  std::uint32_t& tail = knownTails_[static_cast<std::size_t>(peer)];
  std::size_t free = layout_.ringBytes - static_cast<std::uint32_t>(head - tail);
  if (free < wanted) {
    tail = ringTail(rank_, peer).value.load(std::memory_order_acquire);
    free = layout_.ringBytes - static_cast<std::uint32_t>(head - tail);
  }
  return free;
}

std::size_t LocalFabric::ringAvailable(int peer) {
  const std::uint32_t head = ringHead(peer, rank_).value.load(std::memory_order_acquire);
  const std::uint32_t tail = ringTail(peer, rank_).value.load(std::memory_order_relaxed);
  return static_cast<std::uint32_t>(head - tail);
}

std::size_t LocalFabric::ringPeek(int peer, void* out, std::size_t len) {
  const std::size_t avail = ringAvailable(peer);
  const std::size_t n = len < avail ? len : avail;
  const std::uint32_t tail = ringTail(peer, rank_).value.load(std::memory_order_relaxed);
  const std::byte* base = ringData(peer, rank_);
  const std::size_t at = tail & (layout_.ringBytes - 1);
  const std::size_t first = n < layout_.ringBytes - at ? n : layout_.ringBytes - at;
  std::memcpy(out, base + at, first);
  std::memcpy(static_cast<std::byte*>(out) + first, base, n - first);
  return n;
}

std::size_t LocalFabric::ringRead(int peer, void* out, std::size_t len) {
  const std::size_t held = ringAvailable(peer);
  const std::size_t n = out ? ringPeek(peer, out, len) : (len < held ? len : held);
  if (n == 0) return 0;
  WaitWord& tail = ringTail(peer, rank_);
  tail.value.store(tail.value.load(std::memory_order_relaxed) + static_cast<std::uint32_t>(n),
                   std::memory_order_release);
  // The sender waits for room only on a ring with less free than a message header (far less than half of it): it is
  // woken then, and a read of a ring it is not waiting on spares the write to its doorbell's line, which it reads
  // while it spins (that write cost a small message's round trip a quarter of its time).
  if (held > layout_.ringBytes / 2) ring(peer);
  return n;
}

}  // namespace braid::transport
