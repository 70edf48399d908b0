#include "bench/provenance.hpp"

#include <ctime>

#include "braid_commit.h"  // generated at every build by cmake/write_commit.cmake

namespace braid::tools {

std::string sourceCommit() { return BRAID_COMMIT; }

std::vector<std::string> sourceDirtyFiles() {
  std::vector<std::string> out;
  const std::string all = BRAID_DIRTY_FILES;
  std::size_t start = 0;
  while (start < all.size()) {
    const auto end = all.find('\n', start);
    const std::string path = all.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!path.empty()) out.push_back(path);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string isoNow() {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::string shellCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& word : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789-_./=:,+@%") == std::string::npos;
    if (plain) {
      out += word;
      continue;
    }
    out += '\'';
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

nlohmann::json provenanceMeta(const std::string& command, const std::string& date, const MachineInfo& machine,
                              const std::string& link, const std::map<std::string, std::string>& peers) {
  nlohmann::json meta = {{"command", command},
                         {"commit", sourceCommit()},
                         {"date", date},
                         {"machine", machineJson(machine, link)},
                         {"peers", nlohmann::json::object()},
                         {"version", BRAID_VERSION}};
  const auto dirty = sourceDirtyFiles();
  if (!dirty.empty()) meta["dirty_files"] = dirty;
  for (const auto& [peer, version] : peers) meta["peers"][peer] = version;
  return meta;
}

}  // namespace braid::tools
