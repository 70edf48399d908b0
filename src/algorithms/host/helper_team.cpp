#include "algorithms/host/helper_team.hpp"

#include <algorithm>
#include <chrono>

#include "base/error.hpp"
#include "base/logging.hpp"
#include "base/threads.hpp"

namespace braid::host {

namespace {

constexpr unsigned kCountBits = 20;
constexpr std::uint64_t kCountMask = (std::uint64_t{1} << kCountBits) - 1;
constexpr std::uint32_t kGenerationMask = (std::uint32_t{1} << 24) - 1;
// Pieces are at most threads(): far below the 20 bits a ticket gives them.
constexpr int kMostThreads = 256;

std::uint32_t generationOf(std::uint32_t passes) { return passes & kGenerationMask; }

std::size_t ceilDiv(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Spins until done() holds or `micros` pass, reading the clock every 64 tries (as transport::waitUntil does);
// returns whether done() held.
template <typename Done>
bool spinFor(long micros, Done&& done) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start{};
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    transport::cpuRelax();
    if (i % 64 == 0) {
      const auto now = Clock::now();
      if (start == Clock::time_point{}) start = now;
      if (now - start >= std::chrono::microseconds(micros)) return done();
    }
  }
}

}  // namespace

HelperTeam::HelperTeam(int threads, long spinMicros)
    : threads_(std::clamp(threads, 1, kMostThreads)), spinMicros_(std::max(spinMicros, 0L)) {}

HelperTeam::~HelperTeam() {
  if (helpers_.empty()) return;
  stopping_.store(true, std::memory_order_release);
  transport::post(generation_, passes_ + 1);  // a value no helper has seen: every one wakes, finds stopping_ set
  for (std::thread& helper : helpers_) helper.join();
}

void HelperTeam::startHelpers() {
  try {
    for (int worker = static_cast<int>(helpers_.size()) + 1; worker < threads_; ++worker) {
      helpers_.push_back(startThread("a shared-memory helper thread", [this, worker] { helperLoop(worker); }));
    }
  } catch (const Error& e) {
    // The pieces go to whoever takes them: the pass runs on the threads that started. Failing the call instead would
    // fail it on this rank alone, and leave its peers waiting for it.
    logLine(
        LogLevel::kWarn, -1,
        strCat(e.what(), "; large calls over shared memory run on ", helpers_.size() + 1, " threads, not ", threads_));
  }
}

void HelperTeam::run(std::size_t total, std::size_t minGrain, std::size_t align, Piece piece) {
  if (total == 0) return;
  const std::size_t step = std::max<std::size_t>(align, 1);
  const std::size_t grain =
      ceilDiv(std::max({minGrain, std::size_t{1}, ceilDiv(total, static_cast<std::size_t>(threads_))}), step) * step;
  if (threads_ == 1 || grain >= total) {
    piece(0, total, 0);
    return;
  }
  if (helpers_.empty()) startHelpers();
  const std::uint64_t pieces = ceilDiv(total, grain);
  total_ = total;
  grain_ = grain;
  piece_ = piece;
  completed_.value.store(0, std::memory_order_relaxed);
  if (generationOf(++passes_) == 0) ++passes_;
  const std::uint32_t generation = generationOf(passes_);
  ticket_.store((std::uint64_t{generation} << (2 * kCountBits)) | (pieces << kCountBits), std::memory_order_release);
  transport::post(generation_, passes_);
  takePieces(generation, 0);
  // The helpers' pieces: they run on this call's data, so the pass ends only once every one has.
  const auto allRan = [&] { return completed_.value.load(std::memory_order_acquire) == pieces; };
  if (!spinFor(spinMicros_, allRan)) {
    for (std::uint32_t seen; (seen = completed_.value.load(std::memory_order_acquire)) != pieces;) {
      transport::sleepWhileEqual(completed_, seen);
    }
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void HelperTeam::takePieces(std::uint32_t generation, int worker) {
  std::uint64_t ticket = ticket_.load(std::memory_order_acquire);
  while (true) {
    if ((ticket >> (2 * kCountBits)) != generation) return;  // that pass ended; a later one is announced apart
    const std::uint64_t pieces = (ticket >> kCountBits) & kCountMask;
    const std::uint64_t next = ticket & kCountMask;
    if (next >= pieces) return;
    if (!ticket_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      continue;
    }
    const std::size_t begin = next * grain_;
    try {
      piece_(begin, std::min(total_, begin + grain_), worker);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(errorMu_);
      if (!error_) error_ = std::current_exception();
    }
    transport::bump(completed_);
    ticket = ticket_.load(std::memory_order_acquire);
  }
}

void HelperTeam::helperLoop(int worker) {
  std::uint32_t seen = 0;
  while (true) {
    std::uint32_t now = seen;
    const auto announced = [&] { return (now = generation_.value.load(std::memory_order_acquire)) != seen; };
    if (!spinFor(spinMicros_, announced)) {
      while (!announced()) transport::sleepWhileEqual(generation_, seen);
    }
    if (stopping_.load(std::memory_order_acquire)) return;
    seen = now;
    takePieces(generationOf(now), worker);
  }
}

}  // namespace braid::host
