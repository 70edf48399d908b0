// What core/ needs of the device path, declared whether or not braid was built with CUDA: without it, device
// buffers are refused with kUnavailable and host calls never touch a stream.
#pragma once

#include <memory>

#include "algorithms/host/engine.hpp"
#include "base/config.hpp"

namespace braid::device {

/// The engine for calls on device (or managed) buffers, over `host` (which outlives it). `oneHost`: every rank
/// runs on this host, so the GPU kernels may connect them; else device buffers are staged through `host`.
std::unique_ptr<host::Engine> makeDeviceEngine(host::Engine& host, int rank, int size, const Settings& settings,
                                               bool oneHost);

/// Waits for the work queued on env.stream so far (nothing when it is null): host-buffer calls made with a stream
/// start after it.
void waitForStream(const host::OpEnv& env);

}  // namespace braid::device
