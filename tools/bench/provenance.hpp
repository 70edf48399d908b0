// Where a results file's rows come from (bench/results/README.md, "Meta"): the command, the commit of the tree the
// binary was built from (cmake/write_commit.cmake), when, on what machine, and the versions of the peers that ran.
// Shared by `braid bench` and the drivers in bench/, so that every tool writes the same fields.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/machine_info.hpp"

namespace braid::tools {

/// The commit this binary was built from, "<hash>-dirty" when the tree had local changes; "unknown" when the build
/// had neither git nor BRAID_SOURCE_COMMIT.
std::string sourceCommit();
/// With a "-dirty" commit: the paths that differed from it (git status --porcelain, or BRAID_SOURCE_DIRTY_FILES).
std::vector<std::string> sourceDirtyFiles();

/// Now, as ISO 8601 UTC to the second: "2026-12-02T09:32:00Z".
std::string isoNow();

/// argv joined by spaces, each word quoted for a POSIX shell where it needs it, so that the line can be run again.
std::string shellCommand(const std::vector<std::string>& argv);

/// The schema's meta: command, commit (and dirty_files when dirty), date, machine (with `link`), peers (peer ->
/// version, only those given) and braid's version.
nlohmann::json provenanceMeta(const std::string& command, const std::string& date, const MachineInfo& machine,
                              const std::string& link, const std::map<std::string, std::string>& peers);

}  // namespace braid::tools
