// POSIX fds of GPU memory (cuMem allocations) passed between the ranks of a device channel: each rank that shares
// its memory as an fd sends it to every rank of another process through an FdMailbox; ranks of one process use
// the number as it is. The workspaces (device_channel) and registered buffers (buffer_registry) travel this way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/engine.hpp"
#include "transport/cuda_ipc/fd_mailbox.hpp"

namespace braid::device {

class FdTrade {
 public:
  /// Collective over `host`, every rank with the same `pids` (each rank's process) and `offersFd` (whether it shares
  /// an fd): binds this rank's mailbox when any fd crosses a process boundary. False on every rank alike, with the
  /// reason in `why`, when a rank could not.
  bool open(Engine& host, int rank, std::vector<int> pids, std::vector<bool> offersFd, std::uint64_t nonce,
            const OpEnv& env, std::string* why);
  /// Sends this rank's `fd` (tagged with `value`) to every rank of another process, when it offers one, and
  /// receives theirs. Throws on a missing letter (kTimeout) or one from a rank that should not send (kInternal).
  void trade(int fd, std::uint64_t value, const OpEnv& env);
  /// The fd to import rank p's memory from: the one received, or for a rank of this process `localFd` (its own
  /// number); -1 when p offers none. Received fds stay open as long as this object.
  int fdOf(int p, int localFd) const;

 private:
  bool remote(int p) const { return pids_[static_cast<std::size_t>(p)] != pids_[static_cast<std::size_t>(rank_)]; }
  bool offers(int p) const { return offersFd_[static_cast<std::size_t>(p)]; }

  int rank_ = 0;
  std::vector<int> pids_;
  std::vector<bool> offersFd_;
  std::unique_ptr<transport::FdMailbox> mailbox_;
  std::vector<int> fds_;
  std::vector<transport::FdCloser> received_;
};

}  // namespace braid::device
