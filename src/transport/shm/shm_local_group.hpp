// LocalGroup for ranks that are processes of one host: every rank's region is a POSIX shm segment.
#pragma once

#include <sys/types.h>

#include <vector>

#include "transport/local_group.hpp"
#include "transport/shm/shm_segment.hpp"

namespace braid::transport {

/// What a rank tells its peers about its segment (exchanged through the bootstrap store).
struct ShmPeerInfo {
  std::string segmentName;
  pid_t pid = 0;
  std::string pidNamespace;  // /proc/self/ns/pid link text: pids only mean something within one namespace
};

class ShmLocalGroup final : public LocalGroup {
 public:
  /// `segments[rank]` is this rank's own (created) segment, the others are peers' (opened).
  ShmLocalGroup(int rank, std::vector<ShmSegment> segments, const std::vector<ShmPeerInfo>& peers);
  ~ShmLocalGroup() override;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(segments_.size()); }
  std::size_t regionBytes() const override { return segments_[rank_].bytes(); }
  std::byte* region(int peer) override { return segments_[peer].data(); }
  bool peerAlive(int peer) override;
  const char* kind() const override { return "shm"; }

  /// Removes this rank's segment name; call once every peer has mapped it.
  void unlinkOwn() { segments_[rank_].unlink(); }
  /// The names the segments were created under ("/braid-<tag>-<rank>"), for checks that none is left behind.
  std::vector<std::string> segmentNames() const;

  static std::string pidNamespace();

 private:
  int rank_;
  std::vector<ShmSegment> segments_;
  std::vector<int> pidfds_;  // -1 where the peer's liveness cannot be watched (other pid namespace)
  std::vector<pid_t> pids_;
};

}  // namespace braid::transport
