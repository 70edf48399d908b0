#include "transport/wait.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace braid::transport {

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

namespace {

// Shared (not FUTEX_PRIVATE) futexes: the word may live in memory mapped by several processes.
void futexWait(std::atomic<std::uint32_t>* addr, std::uint32_t expected, long nanos) {
  timespec ts{0, nanos};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<std::uint32_t>* addr) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

void post(WaitWord& word, std::uint32_t value) {
  // seq_cst store then seq_cst load of sleepers pairs with the sleeper's increment-then-recheck: either the
  // sleeper sees the new value, or we see its increment and wake it.
  word.value.store(value, std::memory_order_seq_cst);
  if (word.sleepers.load(std::memory_order_seq_cst) != 0) futexWakeAll(&word.value);
}

void postQuietly(WaitWord& word, std::uint32_t value) { word.value.store(value, std::memory_order_release); }

void wakeSleepers(WaitWord& word) {
  // The fence orders the store of postQuietly before the load of sleepers, as post's seq_cst store does; by now the
  // store has usually drained, so it costs little.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (word.sleepers.load(std::memory_order_seq_cst) != 0) futexWakeAll(&word.value);
}

void bump(WaitWord& word) {
  word.value.fetch_add(1, std::memory_order_seq_cst);
  if (word.sleepers.load(std::memory_order_seq_cst) != 0) futexWakeAll(&word.value);
}

void sleepWhileEqual(WaitWord& word, std::uint32_t seen, long sliceMicros) {
  const long nanos = (sliceMicros > 0 ? sliceMicros : kSleepSliceMicros) * 1000;
  word.sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (word.value.load(std::memory_order_seq_cst) == seen) futexWait(&word.value, seen, nanos);
  word.sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

void yieldCore() { sched_yield(); }

}  // namespace braid::transport
