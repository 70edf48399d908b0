// The CPU quota and memory limit of the cgroups this process runs in: a container's, a Kubernetes pod's, a systemd
// slice's. Each is the tightest along the process's path from its own cgroup up to the root of the hierarchy, in the
// unified (v2) hierarchy and in the v1 cpu and memory controllers' alike, as /proc/self/cgroup places the process.
#pragma once

#include <cstdint>
#include <string>

namespace braid::topology {

struct CgroupLimits {
  double cpus = 0;  ///< quota over period, in CPUs (1.5: one and a half); 0: none
  /// Which cgroup that quota is set on: its directory's inode, which no other cgroup of the machine shares (0: none
  /// or unknown). Processes of one container share the container's quota; those of two containers each have one.
  std::uint64_t cpusGroup = 0;
  std::uint64_t memoryBytes = 0;  ///< 0: none (v1's "no limit", a huge number, is returned as read)
};

/// `cpus` rounded up to whole CPUs, the CPUs the quota can keep busy at once (at least 1); 0 for no quota.
int wholeCpus(double cpus);

/// `root` prefixes every path (tests point it at a fake tree). A level whose files cannot be read limits nothing: a
/// container that mounts only its own cgroup still names its whole path in /proc/self/cgroup, and only the mount's
/// root, its own cgroup, can be read.
CgroupLimits readCgroupLimits(const std::string& root);

}  // namespace braid::topology
