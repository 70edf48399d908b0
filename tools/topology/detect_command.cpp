// `braid detect [--json] [--topology FILE]`: this machine (or the one FILE describes) as braid sees it.
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "errors.hpp"
#include "topology/detect_report.hpp"
#include "topology/topology_json.hpp"

namespace braid::tools {

void addDetectCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("detect",
                                 "what hardware is here (GPUs and their links, CPUs, NUMA, NICs) and what "
                                 "braid will use");
  auto json = std::make_shared<bool>(false);
  auto file = std::make_shared<std::string>();
  cmd->add_flag("--json", *json, "print the topology as JSON (what --topology reads)");
  cmd->add_option("--topology", *file, "describe the machine in this JSON file instead of this one");
  cmd->callback([json, file] {
    try {
      const topology::Topology t = loadTopology(*file);
      std::fputs((*json ? topologyToJson(t) : detectReport(t)).c_str(), stdout);
    } catch (const Error& e) {
      std::fprintf(stderr, "braid detect: %s\n", e.what());
      setExitStatus(2);
    }
  });
}

}  // namespace braid::tools
