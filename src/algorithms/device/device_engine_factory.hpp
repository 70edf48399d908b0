// What core/ needs of the device path, declared whether or not braid was built with CUDA: without it, device
// buffers are refused with kUnavailable and host calls never touch a stream.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "algorithms/device/device_algorithms.hpp"
#include "algorithms/engine.hpp"
#include "base/config.hpp"

namespace braid::device {

/// The device engine's choices, made by core/ (algorithms do not reach into tuning's selector): `sharedPath` says
/// whether every collective takes the shared-GPU path, given whether some ranks share a GPU (core/ knows whether an
/// MPS server runs); `allreduce` picks one of allreduceAlgorithms(facts) (device_algorithms.hpp) for the message
/// size, what the engine found and what joins the GPUs, and `explain` says why; `blocks`
/// sizes a kernel's grid for a round of `windowBytes`; `chunkBytes`: what a block of the one-shot kernel pushes
/// between two flags (0: its whole piece at once).
struct DevicePolicy {
  std::function<bool(bool shared)> sharedPath;
  std::function<const tuning::AlgorithmDescriptor&(std::size_t bytes, const DeviceFacts& facts, const GpuLinks& links)>
      allreduce;
  std::function<std::string(std::size_t bytes, const DeviceFacts& facts, const GpuLinks& links)> explain;
  std::function<int(std::size_t windowBytes, int maxBlocks)> blocks;
  std::size_t chunkBytes = 0;
};

/// The engine for calls on device (or managed) buffers, over `host` (which outlives it). `oneHost`: every rank
/// runs on this host, so the GPU kernels may connect them; else device buffers are staged through `host`.
/// `device`: the GPU this rank's engine is bound to (where its first device buffer lives); every call runs with it
/// current, whichever thread runs the call (a call queued behind an async one runs on the progress thread, whose
/// current GPU is not the caller's). -1: the GPU current on the thread of the first call.
/// `sharedGpu`: the identity (gpuIdentity) of a GPU that this rank shares with ranks of other hosts on its
/// machine, learned at creation (empty: none). When `device` is that GPU, staged results go back by value writes.
std::unique_ptr<Engine> makeDeviceEngine(Engine& host, int rank, int size, const Settings& settings, bool oneHost,
                                         DevicePolicy policy, int device, const std::string& sharedGpu);

/// The UUID of GPU `device` (-1: the calling thread's current one) as hex text; empty when there is no CUDA device
/// (or braid was built without CUDA). Initialises CUDA's runtime.
std::string gpuIdentity(int device);

/// Waits for the work queued on env.stream so far (nothing when it is null): host-buffer calls made with a stream
/// start after it.
void waitForStream(const OpEnv& env);

}  // namespace braid::device
