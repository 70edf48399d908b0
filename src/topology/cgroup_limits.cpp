#include "topology/cgroup_limits.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace braid::topology {

namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool listsController(const std::string& list, const std::string& controller) {
  std::stringstream s(list);
  std::string name;
  while (std::getline(s, name, ',')) {
    if (name == controller) return true;
  }
  return false;
}

// The process's cgroup in the hierarchy of `controller` ("" for the unified hierarchy, whose line reads "0::/path"),
// from /proc/self/cgroup's text; "/" where no line says.
std::string placeOf(const std::string& self, const std::string& controller) {
  std::stringstream lines(self);
  std::string line;
  while (std::getline(lines, line)) {
    const std::size_t a = line.find(':');
    const std::size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string list = line.substr(a + 1, b - a - 1);
    const bool match =
        controller.empty() ? line.compare(0, a, "0") == 0 && list.empty() : listsController(list, controller);
    if (match) return b + 1 < line.size() && line[b + 1] == '/' ? line.substr(b + 1) : "/";
  }
  return "/";
}

// Calls visit(directory) for each level from `place` up to the root of the hierarchy mounted at `mount`.
template <class Visit>
void eachLevel(const std::string& mount, std::string place, Visit visit) {
  while (place.size() > 1 && place.back() == '/') place.pop_back();
  for (;;) {
    visit(place == "/" ? mount : mount + place);
    if (place == "/") return;
    const std::size_t cut = place.rfind('/');
    place = cut == 0 || cut == std::string::npos ? "/" : place.substr(0, cut);
  }
}

}  // namespace

int wholeCpus(double cpus) {
  if (!(cpus > 0)) return 0;
  // 1.5 CPUs of quota keep two threads busy part of the time: round up (past the float noise of quota / period).
  return static_cast<int>(std::clamp(std::ceil(cpus - 1e-9), 1.0, 1e6));
}

CgroupLimits readCgroupLimits(const std::string& root) {
  const std::string self = readText(root + "/proc/self/cgroup");
  const std::string mount = root + "/sys/fs/cgroup";
  CgroupLimits limits;
  const auto cpus = [&](const std::string& dir, double quota, double period) {
    if (!(quota > 0 && period > 0)) return;
    const double c = quota / period;
    if (limits.cpus != 0 && c >= limits.cpus) return;
    limits.cpus = c;
    struct stat st {};
    limits.cpusGroup = ::stat(dir.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
  };
  const auto memory = [&](const std::string& text) {
    if (text.empty() || text.rfind("max", 0) == 0) return;
    const std::uint64_t bytes = std::strtoull(text.c_str(), nullptr, 10);
    if (bytes > 0 && (limits.memoryBytes == 0 || bytes < limits.memoryBytes)) limits.memoryBytes = bytes;
  };
  // Unified: cpu.max reads "max 100000" (none) or "150000 100000"; memory.max "max" or bytes.
  eachLevel(mount, placeOf(self, ""), [&](const std::string& dir) {
    std::stringstream s(readText(dir + "/cpu.max"));
    std::string quota;
    double period = 0;
    if (s >> quota >> period && quota != "max") cpus(dir, std::atof(quota.c_str()), period);
    memory(readText(dir + "/memory.max"));
  });
  // v1: a quota of -1 is none.
  eachLevel(mount + "/cpu", placeOf(self, "cpu"), [&](const std::string& dir) {
    const std::string quota = readText(dir + "/cpu.cfs_quota_us");
    const std::string period = readText(dir + "/cpu.cfs_period_us");
    if (!quota.empty() && !period.empty()) cpus(dir, std::atof(quota.c_str()), std::atof(period.c_str()));
  });
  eachLevel(mount + "/memory", placeOf(self, "memory"),
            [&](const std::string& dir) { memory(readText(dir + "/memory.limit_in_bytes")); });
  return limits;
}

}  // namespace braid::topology
