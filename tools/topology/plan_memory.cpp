#include "topology/plan_memory.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "errors.hpp"

namespace braid::tools {

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
// What a training process holds besides the model: the CUDA context, cuBLAS/cuDNN and collective workspaces.
constexpr double kOverheadBytes = 1.5 * kGiB;
// A plan fits when it leaves this share of the GPU free: the caching allocator fragments, and peaks outlast means.
constexpr double kUsableShare = 0.9;

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", bytes / kGiB);
  return text;
}

}  // namespace

Plan planMemory(const ModelShape& in, int gpus, double gpuBytes) {
  if (!(in.params > 0)) fail(ErrorCode::kInvalidArgument, {}, "--params must be positive (e.g. 7e9)");
  if (gpus < 1) fail(ErrorCode::kInvalidArgument, {}, "--gpus must be at least 1, got ", gpus);
  if (!(gpuBytes > 0)) fail(ErrorCode::kInvalidArgument, {}, "no GPU memory size: pass --gpu-mem GiB");
  double weightBytes = 0, masterBytes = 0;
  if (in.dtype == "bf16" || in.dtype == "fp16") {
    weightBytes = 2;
    masterBytes = 4;  // fp32 master weights live with the optimizer
  } else if (in.dtype == "fp32") {
    weightBytes = 4;
  } else {
    fail(ErrorCode::kInvalidArgument, {}, "--dtype ", in.dtype, " (bf16, fp16 or fp32)");
  }
  double stateBytes = 0;
  if (in.optimizer == "adam" || in.optimizer == "adamw") {
    stateBytes = 8;  // momentum and variance in fp32
  } else if (in.optimizer == "sgd") {
    stateBytes = 4;  // momentum
  } else if (in.optimizer != "none") {
    fail(ErrorCode::kInvalidArgument, {}, "--optimizer ", in.optimizer, " (adam, adamw, sgd or none)");
  }
  Plan plan;
  plan.shape = in;
  plan.gpus = gpus;
  plan.gpuBytes = gpuBytes;
  plan.overheadBytes = kOverheadBytes;
  ModelShape& s = plan.shape;
  // A transformer has ~12 L h^2 parameters; without a shape, take the depth of common models of that size.
  if (s.layers <= 0) {
    s.layers = in.params < 2e9 ? 24 : in.params < 1e10 ? 32 : in.params < 4e10 ? 48 : in.params < 1e11 ? 80 : 96;
  }
  if (s.hidden <= 0) s.hidden = static_cast<int>(std::lround(std::sqrt(in.params / (12.0 * s.layers)) / 128) * 128);
  if (s.hidden <= 0) s.hidden = 128;
  const double p = in.params, n = gpus;
  const double w = p * weightBytes, g = p * weightBytes, o = p * (masterBytes + stateBytes);
  const double tokens = static_cast<double>(s.seq) * s.microBatch;
  const double perLayer = 34.0 * tokens * s.hidden;  // 16-bit activations of one layer, attention scores not kept
  const double acts = perLayer * s.layers;
  // Checkpointing keeps each layer's input (2 bytes per value) and recomputes one layer at a time.
  const double actsCkpt = 2.0 * tokens * s.hidden * s.layers + perLayer;
  // ZeRO-3 gathers one layer's weights before use and prefetches the next: two layers' worth in flight.
  const double gathered = 2.0 * w / s.layers;
  plan.strategies = {
      {"DDP", w, g, o, 0, acts, actsCkpt},
      {"ZeRO-1 (optimizer sharded)", w, g, o / n, 0, acts, actsCkpt},
      {"ZeRO-2 / FSDP SHARD_GRAD_OP", w, g / n, o / n, g / s.layers, acts, actsCkpt},
      {"ZeRO-3 / FSDP FULL_SHARD (FSDP2)", w / n, g / n, o / n, gathered, acts, actsCkpt},
  };
  return plan;
}

std::string planReport(const Plan& plan, const std::string& gpuName) {
  const ModelShape& s = plan.shape;
  std::ostringstream out;
  char params[32];
  std::snprintf(params, sizeof params, "%.2f", s.params / 1e9);
  out << params << " B parameters, " << s.dtype << (s.dtype == "fp32" ? "" : " mixed precision") << ", " << s.optimizer
      << "; " << s.layers << " layers, hidden " << s.hidden << "; micro-batch " << s.microBatch << " x " << s.seq
      << " tokens per GPU\n";
  out << "on " << plan.gpus << " x " << (gpuName.empty() ? "GPU" : gpuName) << " (" << gib(plan.gpuBytes)
      << " GiB; a plan fits within " << static_cast<int>(kUsableShare * 100) << "%, with " << gib(plan.overheadBytes)
      << " GiB for CUDA and workspaces)\n\n";
  out << "GiB per GPU                        weights  grads  optim  gather  activ  total  fits | ckpt activ  total  "
         "fits\n";
  const double usable = plan.gpuBytes * kUsableShare;
  for (const Strategy& st : plan.strategies) {
    const double plain = st.total(false) + plan.overheadBytes;
    const double ckpt = st.total(true) + plan.overheadBytes;
    char line[256];
    std::snprintf(line, sizeof line, "%-34s %7s %6s %6s %7s %6s %6s  %-4s | %10s %6s  %s\n", st.name.c_str(),
                  gib(st.weights).c_str(), gib(st.grads).c_str(), gib(st.optimizer).c_str(), gib(st.transient).c_str(),
                  gib(st.activations).c_str(), gib(plain).c_str(), plain <= usable ? "yes" : "no",
                  gib(st.activationsCheckpointed).c_str(), gib(ckpt).c_str(), ckpt <= usable ? "yes" : "no");
    out << line;
  }
  // The answer: the least sharding that fits, first without checkpointing (it costs ~1/3 more compute).
  out << "\n";
  for (const Strategy& st : plan.strategies) {
    if (st.total(false) + plan.overheadBytes <= usable) {
      out << "Activation checkpointing: not needed. " << st.name << " fits without it ("
          << gib(st.total(false) + plan.overheadBytes) << " of " << gib(plan.gpuBytes) << " GiB).\n";
      return out.str();
    }
  }
  for (const Strategy& st : plan.strategies) {
    if (st.total(true) + plan.overheadBytes <= usable) {
      out << "Activation checkpointing: needed. With it, " << st.name << " fits ("
          << gib(st.total(true) + plan.overheadBytes) << " of " << gib(plan.gpuBytes)
          << " GiB); without it nothing does at this micro-batch.\n";
      return out.str();
    }
  }
  out << "Nothing fits, even with checkpointing: use more GPUs, a smaller micro-batch or sequence, tensor or pipeline "
         "parallelism, or CPU offload.\n";
  return out.str();
}

}  // namespace braid::tools
