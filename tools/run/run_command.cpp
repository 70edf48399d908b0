// `braid run -n N [--bind none|core|numa] [--] PROGRAM ARGS...`: N ranks of PROGRAM on this machine.
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "run/launcher.hpp"

namespace braid::tools {

namespace {

// More ranks than this on one machine is a typo, not a job; the bound keeps a slip from forking thousands.
constexpr int kMaxLocalRanks = 4096;

struct RunOptions {
  int ranks = 0;
  std::string bind = "none";
  std::vector<std::string> programSlot;  // never filled: see addRunCommand
};

}  // namespace

void addRunCommand(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "start N ranks of PROGRAM on this machine (torchrun's and braid's variables)");
  cmd->add_option("-n,--nranks", options->ranks, "number of ranks")->required()->check(CLI::Range(1, kMaxLocalRanks));
  cmd->add_option("--bind", options->bind,
                  "pin each rank: none, core (one CPU each), block (the CPUs divided among the ranks, a run of them "
                  "each) or numa (a node's CPUs)")
      ->check(CLI::IsMember({"none", "core", "block", "numa"}));
  // PROGRAM and everything after it belong to the program, its flags included (`braid run -n 2 ./prog -n 5`).
  // CLI11 (2.1) gives that with prefix_command(): the first argument that is not one of ours, and all after it,
  // are left in remaining(). The positional below is only there to be listed by --help and to make CLI11 keep
  // "--" inside this subcommand (without a positional it hands "--" and the rest back to the parent app, which
  // rejects them); its validator refuses every value, so with validate_positionals() nothing lands in it.
  cmd->add_option("PROGRAM", options->programSlot, "the program and its arguments (after -- if it starts with '-')")
      ->check(CLI::Validator([](std::string&) { return std::string("belongs to the program"); }, "", ""));
  cmd->validate_positionals();
  cmd->prefix_command();
  cmd->callback([cmd, options] {
    std::vector<std::string> argv = cmd->remaining();
    if (!argv.empty() && argv.front() == "--") argv.erase(argv.begin());
    if (argv.empty()) throw CLI::RequiredError("PROGRAM");
    LaunchSpec spec;
    spec.ranks = options->ranks;
    spec.bind = options->bind;
    spec.argv = std::move(argv);
    try {
      const LaunchResult result = launchLocal(spec);
      if (!result.message.empty()) std::fprintf(stderr, "braid run: %s\n", result.message.c_str());
      setExitStatus(result.exitStatus);
    } catch (const std::exception& e) {  // the launcher could not start the job (no pipes, no ports, ...)
      std::fprintf(stderr, "braid run: %s\n", e.what());
      setExitStatus(1);
    }
  });
}

}  // namespace braid::tools
