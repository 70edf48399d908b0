#include "transport/shm/shm_local_group.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>

namespace braid::transport {

namespace {

int openPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

// Without pidfds (kernels before 5.3): a zombie still answers kill(), so read its state too.
bool procAlive(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // cannot tell: assume alive, the timeout still bounds the wait
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || (line[close + 2] != 'Z' && line[close + 2] != 'X');
}

}  // namespace

std::string ShmLocalGroup::pidNamespace() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

ShmLocalGroup::ShmLocalGroup(int rank, std::vector<ShmSegment> segments, const std::vector<ShmPeerInfo>& peers)
    : rank_(rank), segments_(std::move(segments)) {
  const std::string myNamespace = pidNamespace();
  for (std::size_t r = 0; r < peers.size(); ++r) {
    const bool watchable = static_cast<int>(r) != rank_ && !myNamespace.empty() &&
                           peers[r].pidNamespace == myNamespace && peers[r].pid > 0;
    pids_.push_back(watchable ? peers[r].pid : 0);
    pidfds_.push_back(watchable ? openPidfd(peers[r].pid) : -1);
  }
}

ShmLocalGroup::~ShmLocalGroup() {
  for (int fd : pidfds_) {
    if (fd >= 0) ::close(fd);
  }
}

std::vector<std::string> ShmLocalGroup::segmentNames() const {
  std::vector<std::string> names;
  for (const auto& s : segments_) names.push_back(s.name());
  return names;
}

bool ShmLocalGroup::peerAlive(int peer) {
  if (pidfds_[peer] >= 0) {
    pollfd p{pidfds_[peer], POLLIN, 0};
    // A pidfd becomes readable when its process exits (zombies included).
    return ::poll(&p, 1, 0) == 0;
  }
  if (pids_[peer] > 0) return procAlive(pids_[peer]);
  return true;
}

}  // namespace braid::transport
