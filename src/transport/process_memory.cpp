#include "transport/process_memory.hpp"

#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.hpp"

namespace braid::transport {

namespace {

ProcessIdentity identify() {
  ProcessIdentity me;
  me.pid = static_cast<std::int32_t>(::getpid());
  struct stat st {};
  if (::stat("/proc/self/ns/pid", &st) == 0) me.pidNamespace = static_cast<std::uint64_t>(st.st_ino);
  return me;
}

}  // namespace

const ProcessIdentity& thisProcess() {
  // Asked again after a fork: a forked rank is another process with the same static.
  static thread_local ProcessIdentity cached{};
  const auto pid = static_cast<std::int32_t>(::getpid());
  if (cached.pid != pid) cached = identify();
  return cached;
}

bool readProcessMemory(const ProcessIdentity& owner, std::uint64_t address, void* out, std::size_t bytes,
                       std::string* why) {
  const ProcessIdentity& me = thisProcess();
  if (owner == me) {
    std::memcpy(out, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(address)), bytes);
    return true;
  }
  if (owner.pidNamespace == 0 || owner.pidNamespace != me.pidNamespace) {
    if (why) *why = "the sender is in another pid namespace";
    return false;
  }
  auto* into = static_cast<std::byte*>(out);
  std::size_t done = 0;
  while (done < bytes) {
    // One call moves at most what fits its iovec (and the kernel may stop short at about 2 GiB): loop on the rest.
    iovec local{into + done, bytes - done};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address + done)), bytes - done};
    const ssize_t got = ::process_vm_readv(owner.pid, &local, 1, &remote, 1, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (why) *why = strCat("process_vm_readv from pid ", owner.pid, ": ", std::strerror(errno));
      return false;
    }
    if (got == 0) {
      if (why) *why = strCat("process_vm_readv from pid ", owner.pid, " moved nothing");
      return false;
    }
    done += static_cast<std::size_t>(got);
  }
  return true;
}

}  // namespace braid::transport
