// `braid model COLLECTIVE [--nodes N] [--ranks-per-node L] [--intra LINK] [--nic-gbps G] [--nics K]
//  [--latency-us U] [-b MIN] [-e MAX] [-f F]`: projected times for a described cluster;
// `braid model COLLECTIVE --compare FILE.json --link LINK [--impl braid+graph]`: the model against measured rows.
#include <cstdio>
#include <memory>

#include "braid/knobs.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "model/model_report.hpp"

namespace braid::tools {

namespace {

// --intra-gbs and --intra-latency-us replace the table's numbers for the link (a machine of one's own).
void overrideLink(tuning::LinkCost& link, double gbs, double latencyUs) {
  if (gbs > 0) link.bandwidthGBs = gbs;
  if (latencyUs >= 0) link.latencyUs = latencyUs;
  if (gbs > 0 || latencyUs >= 0) link.source = "given";
}

}  // namespace

void addModelCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "model", "project collective times for a cluster from the cost model (or set it against measured JSON)");
  struct Options {
    std::string collective;
    int nodes = 1;
    int ranksPerNode = 8;
    std::string intra = "nvlink";
    double intraGbs = 0;
    double intraLatencyUs = -1;
    double nicGbps = 100;
    int nics = 1;
    int rails = 1;
    double latencyUs = 10;
    std::string minBytes = "8";
    std::string maxBytes = "1G";
    int factor = 4;
    std::string compare;
    std::string link = "nvlink";
    std::string impl = "braid";
  };
  auto o = std::make_shared<Options>();
  const auto links = CLI::IsMember({"nvlink", "pcie", "shm", "tcp"});
  cmd->add_option("collective", o->collective, "allreduce, allgather or reducescatter")
      ->required()
      ->check(CLI::IsMember({"allreduce", "allgather", "reducescatter"}));
  cmd->add_option("--nodes", o->nodes, "hosts (default 1)")->check(CLI::PositiveNumber);
  cmd->add_option("--ranks-per-node", o->ranksPerNode, "ranks (GPUs) per host (default 8)")->check(CLI::PositiveNumber);
  cmd->add_option("--intra", o->intra, "what joins a host's ranks: nvlink, pcie, shm, tcp (default nvlink)")
      ->check(links);
  cmd->add_option("--intra-gbs", o->intraGbs, "override: GB/s one rank moves inside its host (also with --compare)");
  cmd->add_option("--intra-latency-us", o->intraLatencyUs,
                  "override: microseconds per step inside a host (also with --compare)");
  cmd->add_option("--nic-gbps", o->nicGbps, "each NIC's rate in Gbit/s (default 100)")->check(CLI::PositiveNumber);
  cmd->add_option("--nics", o->nics, "NICs per host (default 1)")->check(CLI::PositiveNumber);
  cmd->add_option("--rails", o->rails, "NICs one rank stripes over (BRAID_IFNAME naming several; default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--latency-us", o->latencyUs, "microseconds per step between hosts (default 10)");
  cmd->add_option("-b,--min-bytes", o->minBytes, "smallest size (default 8)");
  cmd->add_option("-e,--max-bytes", o->maxBytes, "largest size (default 1G)");
  cmd->add_option("-f,--factor", o->factor, "size step (default 4)")->check(CLI::Range(2, 1024));
  cmd->add_option("--compare", o->compare, "a bench JSON file: its braid rows against the model");
  cmd->add_option("--link", o->link, "with --compare: the link those ranks used (default nvlink)")->check(links);
  cmd->add_option("--impl", o->impl, "with --compare: the rows to take (default braid; braid+graph: CUDA graphs)");
  cmd->callback([o] {
    try {
      const tuning::Collective collective = *tuning::parseCollective(o->collective);
      if (!o->compare.empty()) {
        tuning::LinkCost link = tuning::defaultLinkCost(*tuning::parseLink(o->link));
        overrideLink(link, o->intraGbs, o->intraLatencyUs);
        const auto rows = measuredRows(o->compare, collective, o->impl);
        std::fputs(compareReport(collective, link, rows).c_str(), stdout);
        return;
      }
      const auto lo = parseBytes(o->minBytes);
      const auto hi = parseBytes(o->maxBytes);
      if (!lo || !hi || *lo == 0 || *lo > *hi) {
        fail(ErrorCode::kInvalidArgument, {}, "sizes ", o->minBytes, "..", o->maxBytes, " are not a range");
      }
      tuning::Cluster c;
      c.nodes = o->nodes;
      c.ranksPerNode = o->ranksPerNode;
      c.intra = tuning::defaultLinkCost(*tuning::parseLink(o->intra));
      overrideLink(c.intra, o->intraGbs, o->intraLatencyUs);
      c.inter = {o->latencyUs, o->nicGbps / 8, "given"};
      c.nics = o->nics;
      c.rails = o->rails;
      std::fputs(modelReport(collective, c, *lo, *hi, static_cast<std::size_t>(o->factor)).c_str(), stdout);
    } catch (const Error& e) {
      std::fprintf(stderr, "braid model: %s\n", e.what());
      setExitStatus(2);
    }
  });
}

}  // namespace braid::tools
