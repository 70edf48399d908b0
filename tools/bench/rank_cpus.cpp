#include "bench/rank_cpus.hpp"

#include <sched.h>

namespace braid::tools {

std::vector<std::uint64_t> cpuMaskOfThisThread() {
  static_assert(CPU_SETSIZE == 64 * kCpuMaskWords);
  std::vector<std::uint64_t> mask(kCpuMaskWords, 0);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return mask;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) mask[static_cast<std::size_t>(cpu) / 64] |= std::uint64_t{1} << (cpu % 64);
  }
  return mask;
}

std::string cpuListOf(const std::uint64_t* mask) {
  auto has = [mask](std::size_t cpu) { return cpu < 64 * kCpuMaskWords && ((mask[cpu / 64] >> (cpu % 64)) & 1) != 0; };
  std::string list;
  for (std::size_t cpu = 0; cpu < 64 * kCpuMaskWords; ++cpu) {
    if (!has(cpu)) continue;
    std::size_t last = cpu;
    while (has(last + 1)) ++last;
    if (!list.empty()) list += ',';
    list += std::to_string(cpu);
    if (last > cpu) list += "-" + std::to_string(last);
    cpu = last;
  }
  return list;
}

nlohmann::json cpuListsOf(const std::vector<std::uint64_t>& gathered, int ranks) {
  nlohmann::json lists = nlohmann::json::array();
  for (int r = 0; r < ranks && (static_cast<std::size_t>(r) + 1) * kCpuMaskWords <= gathered.size(); ++r) {
    lists.push_back(cpuListOf(gathered.data() + static_cast<std::size_t>(r) * kCpuMaskWords));
  }
  return lists;
}

}  // namespace braid::tools
