// Threads that share a rank's large memory passes over shared memory: the copies into its slot, the reduction of
// its block, the copies out of its peers' slots. One core moves a few tens of GB/s however much more the machine's
// memory gives; a rank with CPUs of its own to spare cuts each pass into pieces that it and its helpers take from
// one counter. A helper that wakes late takes fewer pieces (or none), so no pass waits for a helper to start.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/deadline.hpp"
#include "base/function_ref.hpp"
#include "transport/wait.hpp"

namespace braid::host {

class HelperTeam {
 public:
  /// One piece [begin, end) of a pass, run by thread `worker`: 0 the caller, 1 .. threads()-1 the helpers (an index
  /// for per-thread scratch).
  using Piece = FunctionRef<void(std::size_t begin, std::size_t end, int worker)>;

  /// `threads`: how many threads a pass runs on, the caller included (1: the caller alone; no helper is ever
  /// started). `spinMicros`: how long an idle helper, and a caller waiting for the pass's last pieces, spin before
  /// they sleep. Helpers start at the first pass cut into more than one piece, on the caller's CPUs (they inherit
  /// its affinity), and no more of them than those CPUs leave room for: a caller bound to one CPU runs alone.
  HelperTeam(int threads, long spinMicros);
  ~HelperTeam();
  HelperTeam(const HelperTeam&) = delete;
  HelperTeam& operator=(const HelperTeam&) = delete;

  int threads() const { return threads_; }

  /// Runs `piece` over [0, total), cut into a piece a running thread, each of at least `minGrain` (the last
  /// shorter) and starting at a multiple of `align`; returns once every piece ran, rethrowing the first exception
  /// one threw. With one thread, or a pass too small to cut, the caller runs piece(0, total, 0). Nothing runs when
  /// total is 0. Helpers run their pieces in the caller's floating-point mode (rounding, flush-to-zero), so the
  /// bits do not depend on which thread took a piece. One pass at a time: the thread that owns the rank calls it.
  void run(std::size_t total, std::size_t minGrain, std::size_t align, Piece piece);

 private:
  void startHelpers();
  void helperLoop(int worker);
  void takePieces(std::uint32_t generation, int worker);

  const int threads_;
  transport::WaitPolicy policy_;
  std::optional<Deadline> never_ = Deadline::never();
  int running_ = 1;       // the caller and the helpers that started
  bool started_ = false;  // helpers are started once, at the first pass that is cut
  // The pass being run: its generation (24 bits), its number of pieces and the next piece to take (20 bits each),
  // in one word, so that taking a piece is one compare-and-swap that fails for a pass that has ended.
  alignas(64) std::atomic<std::uint64_t> ticket_{0};
  alignas(64) transport::WaitWord generation_;  // the pass count: idle helpers sleep on it
  alignas(64) transport::WaitWord completed_;   // pieces of the pass that ran
  // The pass's shape: written before its ticket, read only by a thread that took one of its pieces (the pass cannot
  // end, nor the next begin, before that piece ran). On a line of its own: the counters above change every piece.
  alignas(64) std::size_t total_ = 0;
  std::size_t grain_ = 0;
  Piece piece_;
  std::uint32_t floatingPointMode_ = 0;
  std::uint32_t passes_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex errorMu_;
  std::exception_ptr error_;
  std::vector<std::thread> helpers_;
};

}  // namespace braid::host
