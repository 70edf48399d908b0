// `braid explain COLLECTIVE BYTES [--mem host|device] [--ranks N] [--hosts H] [--topology FILE]`.
#include <cstdio>
#include <memory>

#include "braid/introspect.hpp"
#include "braid/knobs.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "topology/topology_json.hpp"

namespace braid::tools {

void addExplainCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("explain", "which transport and algorithm braid will use for a collective, and why");
  struct Options {
    std::string collective;
    std::string bytes;
    std::string mem = "host";
    int ranks = 0;
    int hosts = 1;
    std::string topology;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("collective", o->collective, "allreduce, reduce, broadcast, allgather, reducescatter, ...")
      ->required();
  cmd->add_option("bytes", o->bytes, "message size: 8, 64K, 16M, 1G")->required();
  cmd->add_option("--mem", o->mem, "host or device buffers")->check(CLI::IsMember({"host", "device"}));
  cmd->add_option("--ranks", o->ranks, "ranks in all (default: one per GPU for device buffers, else 2)");
  cmd->add_option("--hosts", o->hosts, "hosts the ranks spread over (default 1)");
  cmd->add_option("--topology", o->topology, "the machine in this JSON file (braid detect --json)");
  cmd->callback([o] {
    try {
      const auto bytes = parseBytes(o->bytes);
      if (!bytes) fail(ErrorCode::kInvalidArgument, {}, "'", o->bytes, "' is not a size");
      const topology::Topology t = loadTopology(o->topology);
      CallShape call;
      call.collective = o->collective;
      call.bytes = *bytes;
      call.device = o->mem == "device";
      call.hosts = o->hosts;
      call.ranks =
          o->ranks > 0 ? o->ranks : (call.device && !t.gpus.empty() ? static_cast<int>(t.gpus.size()) : 2) * o->hosts;
      std::fputs(explainCall(t, call).c_str(), stdout);
    } catch (const Error& e) {
      std::fprintf(stderr, "braid explain: %s\n", e.what());
      setExitStatus(2);
    }
  });
}

}  // namespace braid::tools
