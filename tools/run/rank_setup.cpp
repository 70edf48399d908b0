// What every rank's start needs (see rank_setup.hpp): the program's path, free ports, the job token, the
// environment, and CPU binding with the kernel's cpulist parser.
#include "run/rank_setup.hpp"

#include <netinet/in.h>
#include <openssl/rand.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <tuple>

#include "errors.hpp"
#include "run/fd.hpp"
#include "run/line_relay.hpp"

namespace braid::tools {

namespace {

std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) failErrno("sched_getaffinity", errno);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// `cpus` with each core's hardware threads side by side, cores in (package, core) order, as
// /sys/devices/system/cpu/cpuN/topology says; as given where it does not say. Linux numbers a core's second thread
// far from its first (CPU i and i + N/2 on many machines), so runs of CPU numbers would split cores between ranks.
std::vector<int> byCore(const std::vector<int>& cpus) {
  auto read = [](int cpu, const char* what) {
    std::ifstream file("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/" + what);
    long value = -1;
    return (file >> value) ? value : -1;
  };
  std::vector<std::tuple<long, long, int>> keyed;
  for (int cpu : cpus) {
    const long package = read(cpu, "physical_package_id"), core = read(cpu, "core_id");
    if (package < 0 || core < 0) return cpus;
    keyed.emplace_back(package, core, cpu);
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> ordered;
  for (const auto& [package, core, cpu] : keyed) ordered.push_back(cpu);
  return ordered;
}

// The CPUs of each NUMA node that has some this process may use, in node order; empty without NUMA information.
std::vector<std::vector<int>> numaNodeCpus(const std::vector<int>& allowed) {
  std::vector<std::pair<int, std::vector<int>>> nodes;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= 4 || name.compare(0, 4, "node") != 0 ||
        !std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    std::ifstream file(entry.path() / "cpulist");
    std::string text;
    if (!std::getline(file, text)) continue;
    std::vector<int> cpus;
    for (int cpu : parseCpuList(text)) {
      if (std::binary_search(allowed.begin(), allowed.end(), cpu)) cpus.push_back(cpu);
    }
    if (!cpus.empty()) nodes.emplace_back(std::stoi(name.substr(4)), std::move(cpus));
  }
  std::sort(nodes.begin(), nodes.end());
  std::vector<std::vector<int>> result;
  for (auto& node : nodes) result.push_back(std::move(node.second));
  return result;
}

}  // namespace

int resolveProgram(const std::string& name, std::string& path) {
  auto check = [](const std::string& candidate) {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0) return errno;
    if (!S_ISREG(st.st_mode)) return EACCES;
    return ::access(candidate.c_str(), X_OK) == 0 ? 0 : errno;
  };
  if (name.empty()) return ENOENT;
  if (name.find('/') != std::string::npos) {
    path = name;
    return check(name);
  }
  const char* env = std::getenv("PATH");
  const std::string dirs = env ? env : "/bin:/usr/bin";
  int result = ENOENT;
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    const std::string dir = colon == start ? "." : dirs.substr(start, colon - start);
    const std::string candidate = dir + "/" + name;
    const int err = check(candidate);
    if (err == 0) {
      path = candidate;
      return 0;
    }
    if (err == EACCES) result = EACCES;
    start = colon + 1;
  }
  return result;
}

std::pair<int, int> pickTwoFreePorts() {
  Fd sockets[2];
  int ports[2];
  for (int i = 0; i < 2; ++i) {
    sockets[i] = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (sockets[i].get() < 0) failErrno("socket (picking a free port)", errno);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);  // free on every address, as a store binding all of them needs
    addr.sin_port = 0;
    if (::bind(sockets[i].get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      failErrno("bind to port 0 (picking a free port)", errno);
    }
    socklen_t len = sizeof addr;
    if (::getsockname(sockets[i].get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      failErrno("getsockname (picking a free port)", errno);
    }
    ports[i] = ntohs(addr.sin_port);
  }
  return {ports[0], ports[1]};
}

std::string freshToken() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) fail(ErrorCode::kInternal, {}, "RAND_bytes failed to make BRAID_TOKEN");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

std::vector<std::string> rankEnvironment(const LaunchSpec& spec, int rank, int masterPort, int rootPort,
                                         const std::string& token) {
  std::vector<std::pair<std::string, std::string>> vars = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(spec.ranks)},
      {"LOCAL_RANK", std::to_string(rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(spec.ranks)},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", std::to_string(masterPort)},
      {"BRAID_RANK", std::to_string(rank)},
      {"BRAID_WORLD_SIZE", std::to_string(spec.ranks)},
      {"BRAID_LOCAL_RANK", std::to_string(rank)},
      // torchrun's store owns MASTER_PORT, so braid's rank 0 listens on another port.
      {"BRAID_ROOT_ADDR", "127.0.0.1:" + std::to_string(rootPort)},
      {"BRAID_TOKEN", token},
  };
  for (const auto& [name, value] : spec.extraEnv) {
    auto it = std::find_if(vars.begin(), vars.end(), [&](const auto& var) { return var.first == name; });
    if (it != vars.end()) {
      it->second = value;
    } else {
      vars.emplace_back(name, value);
    }
  }
  std::vector<std::string> env;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    if (std::none_of(vars.begin(), vars.end(), [&](const auto& var) { return var.first == name; })) {
      env.emplace_back(text);
    }
  }
  for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
  return env;
}

std::vector<std::vector<int>> planBinding(const LaunchSpec& spec) {
  std::vector<std::vector<int>> plan(spec.ranks);
  if (spec.bind != "none" && spec.bind != "core" && spec.bind != "block" && spec.bind != "numa") {
    fail(ErrorCode::kInvalidArgument, {}, "bind='", spec.bind, "' is not none, core, block or numa");
  }
  if (spec.bind == "none") return plan;
  const std::vector<int> allowed = spec.bind == "block" ? byCore(allowedCpus()) : allowedCpus();
  if (spec.bind == "core" || spec.bind == "block") {
    if (static_cast<std::size_t>(spec.ranks) > allowed.size()) {
      writeAll(spec.errFd, strCat("braid: --bind ", spec.bind, ": ", spec.ranks, " ranks share ", allowed.size(),
                                  " CPUs, so some ranks share a CPU\n"));
    }
    // block: the CPUs dealt out in runs of equal length, a run a rank, whole cores where a run's length is a multiple
    // of a core's threads (a rank's threads then share its run); the CPUs left over when the ranks do not divide them
    // go to no rank.
    const std::size_t each =
        spec.bind == "core" ? 1 : std::max<std::size_t>(1, allowed.size() / static_cast<std::size_t>(spec.ranks));
    for (int r = 0; r < spec.ranks; ++r) {
      for (std::size_t i = 0; i < each; ++i) {
        plan[r].push_back(allowed[(static_cast<std::size_t>(r) * each + i) % allowed.size()]);
      }
    }
    return plan;
  }
  const auto nodes = numaNodeCpus(allowed);
  if (nodes.empty()) {
    writeAll(spec.errFd, "braid: --bind numa: no NUMA information in /sys/devices/system/node; ranks are not bound\n");
    return plan;
  }
  for (int r = 0; r < spec.ranks; ++r) plan[r] = nodes[r % nodes.size()];
  return plan;
}

std::vector<int> parseCpuList(const std::string& text) {
  auto malformed = [&text](std::string_view item) {
    fail(ErrorCode::kInvalidArgument, {}, "cpulist '", text, "' is malformed at '", item, "'");
  };
  auto number = [&](std::string_view digits, std::string_view item) {
    int value = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) malformed(item);
    return value;
  };
  std::string_view rest(text);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
  std::vector<int> cpus;
  while (!rest.empty()) {
    const std::size_t comma = std::min(rest.find(','), rest.size());
    const std::string_view item = rest.substr(0, comma);
    const std::size_t dash = item.find('-');
    const int first = number(item.substr(0, dash), item);
    const int last = dash == std::string_view::npos ? first : number(item.substr(dash + 1), item);
    if (last < first) malformed(item);
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    rest.remove_prefix(std::min(comma + 1, rest.size()));
  }
  return cpus;
}

}  // namespace braid::tools
