#include "bench/machine_info.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <map>

namespace braid::tools {

namespace {

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

// GPU names through the driver API, loaded at run time: nothing here needs CUDA to be installed.
std::string gpus() {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return "";
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  using Get = int (*)(int*, int);
  using Name = int (*)(char*, int, int);
  auto init = reinterpret_cast<Init>(::dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<Count>(::dlsym(lib, "cuDeviceGetCount"));
  auto get = reinterpret_cast<Get>(::dlsym(lib, "cuDeviceGet"));
  auto name = reinterpret_cast<Name>(::dlsym(lib, "cuDeviceGetName"));
  int n = 0;
  if (!init || !count || !get || !name || init(0) != 0 || count(&n) != 0 || n == 0) return "";
  std::map<std::string, int> byName;
  for (int i = 0; i < n; ++i) {
    int dev = 0;
    char buf[256] = {};
    if (get(&dev, i) == 0 && name(buf, sizeof buf, dev) == 0) ++byName[buf];
  }
  std::string out;
  for (const auto& [model, k] : byName) out += (out.empty() ? "" : ", ") + std::to_string(k) + "x " + model;
  return out;
}

}  // namespace

std::string machineDescription() {
  cpu_set_t set;
  const int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  std::string s = cpuModel() + ", " + std::to_string(cores) + " cores";
  const std::string g = gpus();
  if (!g.empty()) s += ", " + g;
  return s;
}

}  // namespace braid::tools
