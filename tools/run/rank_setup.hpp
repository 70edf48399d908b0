// What every rank's start needs, worked out once before the first fork: the program's path, two free ports, a fresh
// job token, each rank's environment and the CPUs each rank is pinned to. Separate from launcher.cpp, which
// supervises the processes: nothing here forks, waits or handles a signal.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "run/launcher.hpp"

namespace braid::tools {

// Like execvp's search: a name with a slash is used as is, otherwise the first executable in PATH. Returns 0 or
// the errno exec would give (ENOENT when nothing matches, EACCES when a match is not executable).
int resolveProgram(const std::string& name, std::string& path);

// Two distinct free ports: both sockets stay bound until both numbers are known.
std::pair<int, int> pickTwoFreePorts();

// BRAID_TOKEN for one job: 16 random bytes in hex.
std::string freshToken();

// One rank's environment ("NAME=value"): the launcher's own, with the variables launchLocal documents and then
// spec.extraEnv set over it.
std::vector<std::string> rankEnvironment(const LaunchSpec& spec, int rank, int masterPort, int rootPort,
                                         const std::string& token);

// Per rank, the CPUs to pin it to (empty: leave it unpinned). Warnings go to errFd.
std::vector<std::vector<int>> planBinding(const LaunchSpec& spec);

}  // namespace braid::tools
