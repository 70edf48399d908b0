// `braid plan`'s arithmetic: memory per GPU to train a model of P parameters with data parallelism (DDP), ZeRO-1,
// ZeRO-2 / FSDP SHARD_GRAD_OP and ZeRO-3 / FSDP FULL_SHARD, with and without activation checkpointing, and whether
// each fits. The accounting is the ZeRO paper's (Rajbhandari et al., 2020: 16 bytes per parameter for mixed
// precision with Adam) and, for activations, Korthikanti et al. 2022 (34 s b h bytes per transformer layer in
// 16-bit, with attention scores not kept, as flash attention does).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::tools {

struct ModelShape {
  double params = 0;               ///< parameter count
  std::string dtype = "bf16";      ///< bf16, fp16 (mixed precision with fp32 master weights) or fp32
  std::string optimizer = "adam";  ///< adam (two fp32 states), sgd (momentum: one), none
  int layers = 0;                  ///< transformer layers; 0: estimated from params
  int hidden = 0;                  ///< hidden size; 0: estimated from params and layers
  int seq = 4096;                  ///< tokens per sequence
  int microBatch = 1;              ///< sequences per GPU per step
};

struct Strategy {
  std::string name;
  double weights = 0, grads = 0, optimizer = 0, transient = 0;  ///< bytes per GPU
  double activations = 0, activationsCheckpointed = 0;          ///< bytes per GPU
  double total(bool checkpointing) const {
    return weights + grads + optimizer + transient + (checkpointing ? activationsCheckpointed : activations);
  }
};

struct Plan {
  ModelShape shape;  ///< with layers and hidden filled in
  int gpus = 0;
  double gpuBytes = 0;
  double overheadBytes = 0;  ///< CUDA context and library workspaces, per GPU
  std::vector<Strategy> strategies;
};

/// Throws braid::Error (kInvalidArgument) naming what is wrong (no parameters, an unknown dtype, ...).
Plan planMemory(const ModelShape& shape, int gpus, double gpuBytes);

/// The table and the answer to "should I turn on activation checkpointing?".
std::string planReport(const Plan& plan, const std::string& gpuName);

}  // namespace braid::tools
