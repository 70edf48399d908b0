// The selector of each engine, made in one place: the communicator's engines and braid explain (introspect.cpp)
// weigh the same candidates on the same machine, so what explain says is what a communicator would do.
#pragma once

#include "algorithms/device/device_algorithms.hpp"
#include "base/config.hpp"
#include "tuning/selector.hpp"

namespace braid::core {

/// `ranks` ranks of one host over shared memory, on `cpus` CPUs they may use together (0: unknown, no
/// oversubscription assumed).
tuning::Selector sharedMemorySelector(int ranks, int cpus, const Settings& settings);
/// `ranks` ranks joined by TCP. They may be on several hosts: this host's CPUs say nothing of how many ranks share
/// each, so no oversubscription is assumed.
tuning::Selector tcpSelector(int ranks, const Settings& settings);
/// The allreduce of device buffers among `ranks` GPUs for what the engine found, over NVLink or PCIe.
tuning::Selector deviceSelector(const device::DeviceFacts& facts, bool nvlink, int ranks, const Settings& settings);

}  // namespace braid::core
