// The `braid` command: run (local launcher), bench (nccl-tests-style sweeps with peers side by side), env, detect,
// doctor, explain, plan, tune.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "braid/types.hpp"
#include "commands.hpp"

namespace braid::tools {

namespace {
int gStatus = 0;
std::vector<std::string> gCommandLine;
}  // namespace

int exitStatus() { return gStatus; }
void setExitStatus(int status) { gStatus = status; }
void setCommandLine(int argc, char** argv) { gCommandLine.assign(argv + 1, argv + argc); }
const std::vector<std::string>& commandLine() { return gCommandLine; }

}  // namespace braid::tools

int main(int argc, char** argv) {
  braid::tools::setCommandLine(argc, argv);
  CLI::App app{"braid: collective communication for host and GPU buffers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "braid " BRAID_VERSION);
  braid::tools::addRunCommand(app);
  braid::tools::addBenchCommand(app);
  braid::tools::addEnvCommand(app);
  braid::tools::addDetectCommand(app);
  braid::tools::addDoctorCommand(app);
  braid::tools::addExplainCommand(app);
  braid::tools::addPlanCommand(app);
  braid::tools::addTuneCommand(app);
  braid::tools::addModelCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return braid::tools::exitStatus();
}
