// Which ranks share a host: the test that decides whether two ranks may talk through shared memory.
#pragma once

#include <string>

namespace braid::transport {

/// "BOOT_ID/net:[INODE]": this kernel's boot id (/proc/sys/kernel/random/boot_id) and this process's network
/// namespace. Ranks share a host, and may use shared memory, iff their strings are equal.
///
/// Why both: the boot id alone tells machines apart but not containers or network namespaces of one machine, which
/// launchers and test beds (scripts/netns-bed.sh) present as separate hosts with their own addresses; ranks there
/// must be wired as remote peers, like on real separate hosts. Where boot_id cannot be read the host name stands in,
/// so that two machines are never taken for one.
std::string hostIdentity();

/// This host's name (gethostname), for messages; "?" where it has none.
std::string hostName();

}  // namespace braid::transport
