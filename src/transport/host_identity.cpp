#include "transport/host_identity.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace braid::transport {

namespace {

std::string bootIdOrHostName() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (std::getline(in, id) && !id.empty()) return id;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') return std::string("host:") + name;
  return "unknown";
}

// The namespace's inode is what readlink shows as "net:[4026531840]"; stat gives it without the text format.
std::string netNamespace() {
  struct stat st {};
  if (::stat("/proc/self/ns/net", &st) != 0) return "net:?";
  return "net:[" + std::to_string(st.st_ino) + "]";
}

}  // namespace

std::string hostIdentity() { return bootIdOrHostName() + "/" + netNamespace(); }

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') return name;
  return "?";
}

}  // namespace braid::transport
