#include "algorithms/host/helper_team.hpp"

#include <sched.h>

#include <algorithm>
#include <cfenv>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

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

// A thread's floating-point mode: on x86 its MXCSR less the sticky exception flags (rounding, flush-to-zero,
// denormals-are-zero: the reduction kernels' SSE/AVX arithmetic follows it), elsewhere its rounding mode.
std::uint32_t floatingPointMode() {
#if defined(__x86_64__) || defined(__i386__)
  return _mm_getcsr() & ~std::uint32_t{0x3F};
#else
  return static_cast<std::uint32_t>(std::fegetround());
#endif
}

void setFloatingPointMode(std::uint32_t mode) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr((_mm_getcsr() & std::uint32_t{0x3F}) | mode);
#else
  std::fesetround(static_cast<int>(mode));
#endif
}

// The CPUs the calling thread may run on (1 where the kernel would not say).
int cpusOfThisThread() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(CPU_COUNT(&set), 1);
}

}  // namespace

HelperTeam::HelperTeam(int threads, long spinMicros) : threads_(std::clamp(threads, 1, kMostThreads)) {
  // The waits of transport/wait.hpp, without a deadline: a helper waits for work as long as the team lives, and a
  // caller for pieces that always end.
  policy_.spinMicros = std::max(spinMicros, 0L);
  policy_.deadline = &never_;
}

HelperTeam::~HelperTeam() {
  if (helpers_.empty()) return;
  stopping_.store(true, std::memory_order_release);
  transport::post(generation_, passes_ + 1);  // a value no helper has seen: every one wakes, finds stopping_ set
  for (std::thread& helper : helpers_) helper.join();
}

void HelperTeam::startHelpers() {
  started_ = true;
  // No more threads than the caller's CPUs: more would take turns on them, each pass waiting for the last to run.
  const int wanted = std::min(threads_, cpusOfThisThread());
  helpers_.reserve(static_cast<std::size_t>(wanted - 1));
  try {
    for (int worker = 1; worker < wanted; ++worker) {
      helpers_.push_back(startThread("a shared-memory helper thread", [this, worker] { helperLoop(worker); }));
    }
  } catch (const Error& e) {
    // The passes run on the threads that started. Failing the call instead would fail it on this rank alone, and
    // leave its peers waiting for it.
    logLine(
        LogLevel::kWarn, -1,
        strCat(e.what(), "; large calls over shared memory run on ", helpers_.size() + 1, " threads, not ", wanted));
  }
  running_ = static_cast<int>(helpers_.size()) + 1;
}

void HelperTeam::run(std::size_t total, std::size_t minGrain, std::size_t align, Piece piece) {
  if (total == 0) return;
  const std::size_t step = std::max<std::size_t>(align, 1);
  const auto grainFor = [&](int threads) {
    return ceilDiv(std::max({minGrain, std::size_t{1}, ceilDiv(total, static_cast<std::size_t>(threads))}), step) *
           step;
  };
  if (threads_ > 1 && !started_ && grainFor(threads_) < total) startHelpers();
  const std::size_t grain = grainFor(running_);
  if (running_ == 1 || grain >= total) {
    piece(0, total, 0);
    return;
  }
  const std::uint64_t pieces = ceilDiv(total, grain);
  total_ = total;
  grain_ = grain;
  piece_ = piece;
  floatingPointMode_ = floatingPointMode();
  completed_.value.store(0, std::memory_order_relaxed);
  if (generationOf(++passes_) == 0) ++passes_;
  const std::uint32_t generation = generationOf(passes_);
  ticket_.store((std::uint64_t{generation} << (2 * kCountBits)) | (pieces << kCountBits), std::memory_order_release);
  transport::post(generation_, passes_);
  takePieces(generation, 0);
  // The helpers' pieces: they run on this call's data, so the pass ends only once every one has.
  transport::waitUntil(
      completed_, [pieces](std::uint32_t ran) { return ran == pieces; }, policy_);
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
    if (worker != 0 && floatingPointMode() != floatingPointMode_) setFloatingPointMode(floatingPointMode_);
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
    transport::waitUntil(
        generation_, [seen](std::uint32_t now) { return now != seen; }, policy_);
    // The word first, then the flag: the destructor sets the flag before it posts, so a helper that read that post
    // sees the flag. Read the other way round, a helper could test the flag, then take the destructor's post as a
    // pass (it finds no pieces) and sleep on a word nobody posts again, with the destructor joining it.
    seen = generation_.value.load(std::memory_order_acquire);
    if (stopping_.load(std::memory_order_acquire)) return;
    takePieces(generationOf(seen), worker);
  }
}

}  // namespace braid::host
