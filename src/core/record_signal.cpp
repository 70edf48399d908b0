#include "core/record_signal.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <set>
#include <thread>

#include "base/error.hpp"
#include "base/logging.hpp"
#include "core/communicator_impl.hpp"

namespace braid::core {

namespace {

struct Registry {
  std::mutex mu;
  std::set<const CommunicatorImpl*> comms;
  int armedSignal = 0;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: the watcher thread may outlive static destruction
  return *r;
}

// Written by the handler, read by the watcher. A global, not a member: the handler may touch nothing else.
int gWakeFd = -1;

void onSignal(int) {
  const int saved = errno;
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(gWakeFd, &byte, 1);  // full pipe: a dump is pending anyway
  errno = saved;
}

void watch(int readFd, std::string name) {
  for (;;) {
    char bytes[64];
    const ssize_t n = ::read(readFd, bytes, sizeof bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    for (const CommunicatorImpl* comm : r.comms) comm->dumpFlightRecord("SIG" + name + " asked for it");
  }
}

int signalNumber(const std::string& text) {
  std::string name = text;
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  if (name == "USR1") return SIGUSR1;
  if (name == "USR2") return SIGUSR2;
  fail(ErrorCode::kInvalidArgument, {}, "BRAID_FLIGHT_RECORDER_SIGNAL='", text,
       "': expected USR1 or USR2 (the signals no runtime braid meets uses for itself)");
}

}  // namespace

void armRecordSignal(const std::string& signal) {
  const int number = signalNumber(signal);
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (r.armedSignal == number) return;
  if (r.armedSignal != 0) {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_FLIGHT_RECORDER_SIGNAL='", signal,
         "': this process already dumps flight records on another signal");
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) failErrno("pipe2(flight record signal)", errno);
  // The watcher blocks in read(); only the handler's end stays non-blocking.
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) & ~O_NONBLOCK);
  gWakeFd = fds[1];
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(number, &action, nullptr) != 0) failErrno("sigaction(flight record signal)", errno);
  std::thread(watch, fds[0], signal.rfind("SIG", 0) == 0 ? signal.substr(3) : signal).detach();
  r.armedSignal = number;
}

void registerForRecordSignal(const CommunicatorImpl* comm) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.comms.insert(comm);
}

void unregisterForRecordSignal(const CommunicatorImpl* comm) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.comms.erase(comm);
}

}  // namespace braid::core
