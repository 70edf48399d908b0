// `braid env`: environment settings that suit this machine (or the one --topology describes), each after a
// comment with its reason, and nothing else, so that `eval "$(braid env)"` works. `--knobs`: every BRAID_* knob
// with its current value, default and meaning, as shell lines too.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "braid/knobs.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "topology/env_advice.hpp"
#include "topology/topology_json.hpp"

namespace braid::tools {

namespace {

void printKnobs() {
  for (const KnobInfo& knob : allKnobs()) {
    const char* value = std::getenv(knob.name.c_str());
    std::printf("# %s (%s, default '%s')\n", knob.doc.c_str(), knobTypeName(knob.type), knob.defaultValue.c_str());
    if (value) {
      std::printf("export %s='%s'\n", knob.name.c_str(), value);
    } else {
      std::printf("# export %s='%s'\n", knob.name.c_str(), knob.defaultValue.c_str());
    }
  }
}

}  // namespace

void addEnvCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("env", "environment settings that suit this machine, as shell exports with reasons");
  struct Options {
    bool knobs = false;
    bool json = false;
    std::string topology;
    int ranks = 0;
  };
  auto o = std::make_shared<Options>();
  cmd->add_flag("--knobs", o->knobs, "print every BRAID_* knob instead: current value, default and meaning");
  cmd->add_flag("--json", o->json, "print the advice as JSON");
  cmd->add_option("--topology", o->topology, "advise for the machine in this JSON file (braid detect --json)");
  cmd->add_option("--ranks-per-node", o->ranks, "local ranks that will run here (default: one per GPU)");
  cmd->callback([o] {
    if (o->knobs) return printKnobs();
    try {
      const topology::Topology t = loadTopology(o->topology);
      const auto advice = adviseEnv(t, o->ranks);
      if (o->json) {
        nlohmann::json j = nlohmann::json::array();
        for (const EnvAdvice& a : advice) j.push_back({{"name", a.name}, {"value", a.value}, {"reason", a.reason}});
        std::printf("%s\n", j.dump(2).c_str());
      } else {
        std::fputs(envScript(advice, bindingNotes(t)).c_str(), stdout);
      }
    } catch (const Error& e) {
      std::fprintf(stderr, "braid env: %s\n", e.what());
      setExitStatus(2);
    }
  });
}

}  // namespace braid::tools
