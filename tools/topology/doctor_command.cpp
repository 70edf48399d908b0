// `braid doctor [--json] [--topology FILE] [--quick]`: what is wrong with this machine's setup for collectives,
// with a verdict per check; exit status 1 when a check failed. With --topology, only the checks a description can
// answer (no process limits, no bandwidth test).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "errors.hpp"
#include "topology/doctor_checks.hpp"
#include "topology/topology_json.hpp"

namespace braid::tools {

void addDoctorCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("doctor", "check this machine's setup for collectives (a verdict per check)");
  struct Options {
    bool json = false;
    bool quick = false;
    std::string topology;
  };
  auto o = std::make_shared<Options>();
  cmd->add_flag("--json", o->json, "print the checks as JSON");
  cmd->add_flag("--quick", o->quick, "skip the bandwidth test of the GPU links");
  cmd->add_option("--topology", o->topology, "check the machine in this JSON file (braid detect --json)");
  cmd->callback([o] {
    try {
      const topology::Topology t = loadTopology(o->topology);
      std::vector<Check> checks = checkTopology(t);
      if (o->topology.empty()) {
        for (Check& c : checkProcess(t)) checks.push_back(std::move(c));
        if (!o->quick) {
          for (Check& c : measureLinks(t)) checks.push_back(std::move(c));
        }
      }
      bool failed = false;
      const std::string report = doctorReport(t.hostname.empty() ? "this machine" : t.hostname, checks, &failed);
      if (o->json) {
        nlohmann::json j = nlohmann::json::array();
        for (const Check& c : checks) {
          j.push_back({{"check", c.name}, {"verdict", verdictName(c.verdict)}, {"detail", c.detail}});
        }
        std::printf("%s\n", j.dump(2).c_str());
      } else {
        std::fputs(report.c_str(), stdout);
      }
      setExitStatus(failed ? 1 : 0);
    } catch (const Error& e) {
      std::fprintf(stderr, "braid doctor: %s\n", e.what());
      setExitStatus(2);
    }
  });
}

}  // namespace braid::tools
