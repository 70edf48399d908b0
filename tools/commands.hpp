// Each subcommand registers itself on the app and runs from its callback; the callback leaves its exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace braid::tools {

void addRunCommand(CLI::App& app);
void addBenchCommand(CLI::App& app);
void addEnvCommand(CLI::App& app);
void addDetectCommand(CLI::App& app);
void addDoctorCommand(CLI::App& app);
void addExplainCommand(CLI::App& app);
void addPlanCommand(CLI::App& app);
void addTuneCommand(CLI::App& app);
void addModelCommand(CLI::App& app);

/// The arguments after the program name, as given (for re-launching ranks and recording runs).
void setCommandLine(int argc, char** argv);
const std::vector<std::string>& commandLine();

/// The status the command's callback set (0 when it did not run).
int exitStatus();
void setExitStatus(int status);

}  // namespace braid::tools
