// `braid plan --params 7e9 [--dtype bf16] [--optimizer adam] [--gpus N] [--gpu-mem GiB] ...`: memory per GPU of
// each data-parallel strategy on the detected (or given) GPUs, and whether activation checkpointing is needed.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "commands.hpp"
#include "errors.hpp"
#include "topology/plan_memory.hpp"
#include "topology/topology_json.hpp"

namespace braid::tools {

namespace {

// "7e9", "7B", "1.3B", "350M", "70000000000".
double parseCount(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) fail(ErrorCode::kInvalidArgument, {}, "--params '", text, "' is not a number");
  const std::string unit(end);
  if (unit == "K" || unit == "k") {
    v *= 1e3;
  } else if (unit == "M" || unit == "m") {
    v *= 1e6;
  } else if (unit == "B" || unit == "b" || unit == "G" || unit == "g") {
    v *= 1e9;
  } else if (unit == "T" || unit == "t") {
    v *= 1e12;
  } else if (!unit.empty()) {
    fail(ErrorCode::kInvalidArgument, {}, "--params '", text, "': unknown unit '", unit, "' (K, M, B, T)");
  }
  return v;
}

}  // namespace

void addPlanCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("plan",
                                 "memory per GPU for DDP and ZeRO/FSDP stages, with and without activation "
                                 "checkpointing, and which fit");
  struct Options {
    std::string params;
    ModelShape shape;
    int gpus = 0;
    double gpuMemGiB = 0;
    std::string topology;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("--params", o->params, "parameter count: 7e9, 7B, 350M")->required();
  cmd->add_option("--dtype", o->shape.dtype, "bf16 or fp16 (mixed precision), or fp32")->capture_default_str();
  cmd->add_option("--optimizer", o->shape.optimizer, "adam, adamw, sgd or none")->capture_default_str();
  cmd->add_option("--gpus", o->gpus, "data-parallel GPUs (default: the GPUs here)");
  cmd->add_option("--gpu-mem", o->gpuMemGiB, "GiB per GPU (default: the first GPU here)");
  cmd->add_option("--layers", o->shape.layers, "transformer layers (default: estimated from the size)");
  cmd->add_option("--hidden", o->shape.hidden, "hidden size (default: estimated)");
  cmd->add_option("--seq", o->shape.seq, "tokens per sequence")->capture_default_str();
  cmd->add_option("--micro-batch", o->shape.microBatch, "sequences per GPU per step")->capture_default_str();
  cmd->add_option("--topology", o->topology, "the machine in this JSON file (braid detect --json)");
  cmd->callback([o] {
    try {
      ModelShape shape = o->shape;
      shape.params = parseCount(o->params);
      const topology::Topology t = loadTopology(o->topology);
      const int gpus = o->gpus > 0 ? o->gpus : static_cast<int>(t.gpus.size());
      const double bytes = o->gpuMemGiB > 0 ? o->gpuMemGiB * 1024 * 1024 * 1024
                           : t.gpus.empty() ? 0
                                            : static_cast<double>(t.gpus.front().memoryBytes);
      if (gpus < 1) fail(ErrorCode::kInvalidArgument, {}, "no GPU here: pass --gpus N and --gpu-mem GiB");
      const Plan plan = planMemory(shape, gpus, bytes);
      std::fputs(planReport(plan, o->gpuMemGiB > 0 || t.gpus.empty() ? "" : t.gpus.front().name).c_str(), stdout);
    } catch (const Error& e) {
      std::fprintf(stderr, "braid plan: %s\n", e.what());
      setExitStatus(2);
    }
  });
}

}  // namespace braid::tools
