// `braid env`: every BRAID_* knob with its current value, default and meaning, as shell assignments.
#include <cstdio>
#include <cstdlib>

#include "base/config.hpp"
#include "commands.hpp"

namespace braid::tools {

void addEnvCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("env", "print every BRAID_* setting: current value, default and meaning");
  cmd->callback([] {
    for (const KnobInfo& knob : allKnobs()) {
      const char* value = std::getenv(knob.name.c_str());
      std::printf("# %s (%s, default '%s')\n", knob.doc.c_str(), knobTypeName(knob.type), knob.defaultValue.c_str());
      if (value) {
        std::printf("export %s='%s'\n", knob.name.c_str(), value);
      } else {
        std::printf("# export %s='%s'\n", knob.name.c_str(), knob.defaultValue.c_str());
      }
    }
  });
}

}  // namespace braid::tools
