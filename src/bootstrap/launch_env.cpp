#include "bootstrap/launch_env.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <vector>

#include "base/error.hpp"
#include "bootstrap/pmix.hpp"
#include "bootstrap/slurm_hostlist.hpp"

namespace braid::bootstrap {

namespace {

// The launchers' own variables (not braid knobs); an empty value counts as unset, as a shell's `VAR=` means.
class Env {
 public:
  explicit Env(const Settings::Lookup& lookup) : lookup_(lookup) {}

  std::string get(const std::string& name) const {
    if (lookup_) return lookup_(name).value_or("");
    const char* value = std::getenv(name.c_str());
    return value ? value : "";
  }
  bool has(const std::string& name) const { return !get(name).empty(); }

 private:
  const Settings::Lookup& lookup_;
};

int parseInt(const std::string& text, const std::string& name, int minimum) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < minimum) {
    fail(ErrorCode::kInvalidArgument, {}, name, "='", text, "' is not an integer >= ", minimum);
  }
  return value;
}

std::string required(const Env& env, const std::string& name, const std::string& hint) {
  std::string value = env.get(name);
  if (value.empty()) fail(ErrorCode::kInvalidArgument, {}, name, " is not set", hint);
  return value;
}

int optionalInt(const Env& env, const std::string& name, int minimum) {
  return env.has(name) ? parseInt(env.get(name), name, minimum) : -1;
}

void checkBelow(int value, const char* valueName, int bound, const char* boundName) {
  if (value >= 0 && bound >= 0 && value >= bound) {
    fail(ErrorCode::kInvalidArgument, {}, valueName, "=", value, " is not below ", boundName, "=", bound);
  }
}

// A host name as launchers write it: an IPv6 literal may come bracketed ("[fe80::1]").
std::string bareHost(std::string host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

// Every interface of the family the root host's text suggests, at root's port.
tcp::Address anyInterface(const tcp::Address& root) {
  return {root.host.find(':') != std::string::npos ? "::" : "0.0.0.0", root.port};
}

// BRAID_ROOT_ADDR, when set, is both where the ranks dial and where rank 0 binds.
bool applyRootOverride(const Settings& settings, LaunchIdentity& id) {
  if (settings.rootAddr.empty()) return false;
  id.root = tcp::Address::parse(settings.rootAddr);
  id.bind = id.root;
  return true;
}

LaunchIdentity fromBraid(const Settings& settings) {
  const std::string hint = "; start the job with `braid run`, or set BRAID_RANK, BRAID_WORLD_SIZE and BRAID_ROOT_ADDR";
  LaunchIdentity id;
  id.launcher = "braid";
  if (settings.worldSize.empty()) fail(ErrorCode::kInvalidArgument, {}, "BRAID_WORLD_SIZE is not set", hint);
  if (settings.rank.empty()) fail(ErrorCode::kInvalidArgument, {}, "BRAID_RANK is not set", hint);
  id.size = parseInt(settings.worldSize, "BRAID_WORLD_SIZE", 1);
  id.rank = parseInt(settings.rank, "BRAID_RANK", 0);
  checkBelow(id.rank, "BRAID_RANK", id.size, "BRAID_WORLD_SIZE");
  if (!settings.localRank.empty()) id.localRank = parseInt(settings.localRank, "BRAID_LOCAL_RANK", 0);
  if (!applyRootOverride(settings, id)) {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_ROOT_ADDR is not set (HOST:PORT where rank 0 listens)");
  }
  id.token = settings.token;
  return id;
}

// A launcher's four variables: rank and size (required), local rank and size (optional, -1 when absent).
void readRanks(LaunchIdentity& id, const Env& env, const char* rank, const char* size, const char* localRank,
               const char* localSize) {
  id.size = parseInt(env.get(size), size, 1);
  id.rank = parseInt(env.get(rank), rank, 0);
  checkBelow(id.rank, rank, id.size, size);
  id.localRank = optionalInt(env, localRank, 0);
  id.localSize = optionalInt(env, localSize, 1);
  checkBelow(id.localRank, localRank, id.localSize, localSize);
}

LaunchIdentity fromTorchrun(const Settings& settings, const Env& env) {
  LaunchIdentity id;
  id.launcher = "torchrun";
  readRanks(id, env, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE");
  if (!applyRootOverride(settings, id)) {
    const std::string hint = " (torchrun sets it; or set BRAID_ROOT_ADDR=HOST:PORT)";
    const std::string host = bareHost(required(env, "MASTER_ADDR", hint));
    const int masterPort = parseInt(required(env, "MASTER_PORT", hint), "MASTER_PORT", 1);
    // torchrun's TCPStore already listens on MASTER_PORT, so braid's store takes the next port.
    if (masterPort >= 65535) {
      fail(ErrorCode::kInvalidArgument, {}, "MASTER_PORT='", masterPort,
           "' leaves no port for braid's store, which listens on MASTER_PORT + 1; set BRAID_ROOT_ADDR=HOST:PORT");
    }
    id.root = {host, static_cast<std::uint16_t>(masterPort + 1)};
    id.bind = anyInterface(id.root);
  }
  id.token = settings.token;
  if (id.token.empty() && env.has("TORCHELASTIC_RUN_ID")) id.token = "torchrun-" + env.get("TORCHELASTIC_RUN_ID");
  return id;
}

LaunchIdentity fromMpirun(const Settings& settings, const Env& env, const PmixProbe& pmixProbe) {
  LaunchIdentity id;
  id.launcher = "mpirun";
  readRanks(id, env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
            "OMPI_COMM_WORLD_LOCAL_SIZE");
  id.token = settings.token;
  if (applyRootOverride(settings, id)) return id;
  std::string why;
  if (!env.has("PMIX_RANK") || !env.has("PMIX_NAMESPACE")) {
    why = "PMIX_RANK and PMIX_NAMESPACE are not both set";
  } else {
    why = pmixProbe ? pmixProbe() : pmix::libraryUnavailableReason();
  }
  if (!why.empty()) {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_ROOT_ADDR is not set and PMIx cannot carry rank 0's address (", why,
         "); set BRAID_ROOT_ADDR=HOST:PORT where rank 0 should listen");
  }
  id.rootViaPmix = true;
  return id;
}

// SLURM_TASKS_PER_NODE's form: "2(x3),1" is 2 tasks on each of 3 nodes, then 1.
std::vector<int> parseTasksPerNode(const std::string& text, const std::string& name) {
  std::vector<int> counts;
  std::size_t pos = 0;
  auto bad = [&]() { fail(ErrorCode::kInvalidArgument, {}, name, "='", text, "' is not a Slurm tasks-per-node list"); };
  while (pos < text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    const std::size_t paren = item.find("(x");
    int count = 0, repeat = 1;
    const std::string countText = item.substr(0, paren);
    auto r = std::from_chars(countText.data(), countText.data() + countText.size(), count);
    if (countText.empty() || r.ec != std::errc() || r.ptr != countText.data() + countText.size()) bad();
    if (paren != std::string::npos) {
      if (item.back() != ')') bad();
      const std::string repeatText = item.substr(paren + 2, item.size() - paren - 3);
      r = std::from_chars(repeatText.data(), repeatText.data() + repeatText.size(), repeat);
      if (repeatText.empty() || r.ec != std::errc() || r.ptr != repeatText.data() + repeatText.size()) bad();
    }
    if (count < 1 || repeat < 1 || counts.size() + repeat > (1u << 20)) bad();
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), count);
    pos = comma + 1;
  }
  if (counts.empty()) bad();
  return counts;
}

LaunchIdentity fromSlurm(const Settings& settings, const Env& env) {
  LaunchIdentity id;
  id.launcher = "slurm";
  const char* sizeName = env.has("SLURM_NTASKS") || !env.has("SLURM_NPROCS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
  id.size = parseInt(env.get(sizeName), sizeName, 1);
  id.rank = parseInt(env.get("SLURM_PROCID"), "SLURM_PROCID", 0);
  checkBelow(id.rank, "SLURM_PROCID", id.size, sizeName);
  id.localRank = optionalInt(env, "SLURM_LOCALID", 0);
  const char* perNodeName = env.has("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
  if (env.has(perNodeName) && env.has("SLURM_NODEID")) {
    const std::vector<int> perNode = parseTasksPerNode(env.get(perNodeName), perNodeName);
    const int node = parseInt(env.get("SLURM_NODEID"), "SLURM_NODEID", 0);
    const std::string nodes = strCat("the node count of ", perNodeName);
    checkBelow(node, "SLURM_NODEID", static_cast<int>(perNode.size()), nodes.c_str());
    id.localSize = perNode[static_cast<std::size_t>(node)];
    checkBelow(id.localRank, "SLURM_LOCALID", id.localSize, perNodeName);
  }
  if (!applyRootOverride(settings, id)) {
    const char* listName = env.has("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
    const std::string list =
        required(env, listName, " (nor SLURM_STEP_NODELIST): set BRAID_ROOT_ADDR=HOST:PORT where rank 0 listens");
    if (settings.port < 1 || settings.port > 65535) {
      fail(ErrorCode::kInvalidArgument, {}, "BRAID_PORT=", settings.port, " is not a TCP port (1..65535)");
    }
    // Slurm gives task 0 to the first node of the step under every built-in distribution (block, cyclic, plane).
    id.root = {firstSlurmHost(list, listName), static_cast<std::uint16_t>(settings.port)};
    id.bind = anyInterface(id.root);
  }
  id.token = settings.token;
  if (id.token.empty() && env.has("SLURM_JOB_ID")) {
    id.token = strCat("slurm-", env.get("SLURM_JOB_ID"), ".", env.get("SLURM_STEP_ID"));
  }
  return id;
}

}  // namespace

void checkJobToken(const std::string& token) {
  if (token.empty()) return;
  const bool hex =
      std::all_of(token.begin(), token.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  if (token.size() < 32 || !hex) {
    fail(ErrorCode::kInvalidArgument, {}, "BRAID_TOKEN must be at least 32 hex digits (128 bits of secret); got ",
         token.size(), " characters", hex ? "" : " that are not all hex digits",
         " (make one with: od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')");
  }
}

bool launcherPresent(const Settings& settings, const Settings::Lookup& lookup) {
  const Env env(lookup);
  return !settings.rank.empty() || !settings.worldSize.empty() || (env.has("RANK") && env.has("WORLD_SIZE")) ||
         (env.has("OMPI_COMM_WORLD_RANK") && env.has("OMPI_COMM_WORLD_SIZE")) || env.has("SLURM_PROCID");
}

LaunchIdentity readLaunchIdentity(const Settings& settings, const Settings::Lookup& lookup,
                                  const PmixProbe& pmixProbe) {
  checkJobToken(settings.token);
  const Env env(lookup);
  // Most specific first: braid run also sets torchrun's variables, and mpirun or torchrun started inside a Slurm
  // allocation inherit SLURM_PROCID from the batch step.
  if (!settings.rank.empty() || !settings.worldSize.empty()) return fromBraid(settings);
  if (env.has("RANK") && env.has("WORLD_SIZE")) return fromTorchrun(settings, env);
  if (env.has("OMPI_COMM_WORLD_RANK") && env.has("OMPI_COMM_WORLD_SIZE")) return fromMpirun(settings, env, pmixProbe);
  if (env.has("SLURM_PROCID")) return fromSlurm(settings, env);
  fail(ErrorCode::kInvalidArgument, {},
       "no launcher environment found (BRAID_RANK, RANK, OMPI_COMM_WORLD_RANK and SLURM_PROCID are all unset): start "
       "the job with `braid run`, torchrun, mpirun or srun, or set BRAID_RANK, BRAID_WORLD_SIZE and BRAID_ROOT_ADDR");
}

}  // namespace braid::bootstrap
