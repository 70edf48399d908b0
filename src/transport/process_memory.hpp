// Reading another process's memory in one copy: Linux's cross-memory attach (process_vm_readv), what Open MPI's
// shared-memory transport calls CMA. Ranks of one host move a large message so with one copy instead of two (into a
// shared ring, out of it). The kernel allows it where the reader may ptrace the owner (same user; Yama's ptrace_scope
// 0, or a relation it allows) and the container's seccomp profile lets the call through; elsewhere it refuses, and
// the caller sends through shared memory instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace braid::transport {

/// A process as another process of the host can name it. Pids are per pid namespace, so the namespace comes along:
/// a pid from another namespace would name a different process.
struct ProcessIdentity {
  std::int32_t pid = 0;
  std::uint64_t pidNamespace = 0;  // the inode of /proc/self/ns/pid (0: unknown)
  bool operator==(const ProcessIdentity&) const = default;
};

/// This process (asked once per thread, and again in a forked child).
const ProcessIdentity& thisProcess();

/// Copies `bytes` at `address` in process `owner` into `out`. A plain copy when `owner` is this process. Returns
/// false, with the reason in `why`, where the kernel refuses or cannot (no permission, another or unknown pid
/// namespace, the process is gone, the range is not mapped there): nothing in `out` is then to be trusted.
bool readProcessMemory(const ProcessIdentity& owner, std::uint64_t address, void* out, std::size_t bytes,
                       std::string* why);

}  // namespace braid::transport
