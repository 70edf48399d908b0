#include "bench/machine_info.hpp"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>

namespace braid::tools {

namespace {

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    // x86 says "model name"; some arm64 kernels say "Model" or nothing at all.
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        const auto start = line.find_first_not_of(" \t", colon + 1);
        if (start != std::string::npos) return line.substr(start);
      }
    }
  }
  return "unknown CPU";
}

// GPU names through the driver API, loaded at run time: nothing here needs CUDA to be installed.
std::vector<std::string> gpuModels() {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return {};
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  using Get = int (*)(int*, int);
  using Name = int (*)(char*, int, int);
  auto init = reinterpret_cast<Init>(::dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<Count>(::dlsym(lib, "cuDeviceGetCount"));
  auto get = reinterpret_cast<Get>(::dlsym(lib, "cuDeviceGet"));
  auto name = reinterpret_cast<Name>(::dlsym(lib, "cuDeviceGetName"));
  int n = 0;
  if (!init || !count || !get || !name || init(0) != 0 || count(&n) != 0) return {};
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    int dev = 0;
    char buf[256] = {};
    out.push_back(get(&dev, i) == 0 && name(buf, sizeof buf, dev) == 0 ? std::string(buf) : "unknown GPU");
  }
  return out;
}

// "10.0.0.1:4000" -> "10.0.0.1"; "[fe80::1]:4000" -> "fe80::1"; a bare address stays as it is.
std::string hostOf(const std::string& address) {
  if (!address.empty() && address.front() == '[') {
    const auto close = address.find(']');
    return address.substr(1, close == std::string::npos ? std::string::npos : close - 1);
  }
  const auto colon = address.find(':');
  if (colon != std::string::npos && address.find(':', colon + 1) == std::string::npos) {
    return address.substr(0, colon);  // one colon: IPv4 with a port (IPv6 text has at least two)
  }
  return address;
}

struct Raw {
  int family = AF_UNSPEC;
  unsigned char bytes[16] = {};
};

Raw parse(const std::string& host) {
  Raw r;
  if (::inet_pton(AF_INET, host.c_str(), r.bytes) == 1) {
    r.family = AF_INET;
  } else if (::inet_pton(AF_INET6, host.c_str(), r.bytes) == 1) {
    r.family = AF_INET6;
  }
  return r;
}

Raw fromSockaddr(const sockaddr* sa) {
  Raw r;
  if (sa == nullptr) return r;
  r.family = sa->sa_family;
  if (sa->sa_family == AF_INET) {
    std::memcpy(r.bytes, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    std::memcpy(r.bytes, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
  }
  return r;
}

bool sameUnderMask(const Raw& a, const Raw& b, const Raw& mask) {
  const int len = a.family == AF_INET ? 4 : 16;
  for (int i = 0; i < len; ++i) {
    if ((a.bytes[i] & mask.bytes[i]) != (b.bytes[i] & mask.bytes[i])) return false;
  }
  return true;
}

bool equal(const Raw& a, const Raw& b) {
  return a.family == b.family && std::memcmp(a.bytes, b.bytes, a.family == AF_INET ? 4 : 16) == 0;
}

bool isLoopback(const Raw& r) {
  if (r.family == AF_INET) return r.bytes[0] == 127;
  static const unsigned char kV6Loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return r.family == AF_INET6 && std::memcmp(r.bytes, kV6Loopback, 16) == 0;
}

}  // namespace

int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

MachineInfo machineInfo() { return {cpuModel(), usableCores(), gpuModels()}; }

nlohmann::json machineJson(const MachineInfo& m, const std::string& link) {
  return {{"cpu", m.cpu}, {"cores", m.cores}, {"gpus", m.gpus}, {"link", link}};
}

std::string machineDescription(const MachineInfo& m) {
  std::string s = m.cpu + ", " + std::to_string(m.cores) + " cores";
  std::map<std::string, int> byModel;
  for (const auto& g : m.gpus) ++byModel[g];
  for (const auto& [model, k] : byModel) s += ", " + std::to_string(k) + "x " + model;
  return s;
}

std::string machineDescription() { return machineDescription(machineInfo()); }

std::vector<std::string> interfacesOf(const std::vector<std::string>& addresses) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) list = nullptr;
  std::vector<std::string> out;
  auto add = [&out](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (const auto& address : addresses) {
    const std::string host = hostOf(address);
    const Raw ip = parse(host);
    if (ip.family == AF_UNSPEC) {
      add(address);
      continue;
    }
    if (isLoopback(ip)) {
      add("loopback");
      continue;
    }
    std::string exact, subnet;
    for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
      const Raw own = fromSockaddr(ifa->ifa_addr);
      if (own.family != ip.family || ifa->ifa_name == nullptr) continue;
      if (equal(own, ip)) exact = ifa->ifa_name;
      if (subnet.empty() && ifa->ifa_netmask != nullptr && !(ifa->ifa_flags & IFF_LOOPBACK) &&
          sameUnderMask(own, ip, fromSockaddr(ifa->ifa_netmask))) {
        subnet = ifa->ifa_name;
      }
    }
    add(!exact.empty() ? exact : !subnet.empty() ? subnet : host);
  }
  if (list != nullptr) ::freeifaddrs(list);
  return out;
}

}  // namespace braid::tools
