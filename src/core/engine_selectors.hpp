// The selector of each engine, made in one place: the communicator's engines and braid explain (introspect.cpp)
// weigh the same candidates on the same machine, so what explain says is what a communicator would do.
#pragma once

#include "algorithms/device/device_algorithms.hpp"
#include "base/config.hpp"
#include "core/engine_stack.hpp"
#include "tuning/selector.hpp"

namespace braid::core {

/// `ranks` ranks of one host over shared memory, on `host.cpus` CPUs they may use together (0: unknown, no
/// oversubscription assumed) and `host.numaNodes` NUMA nodes (0: unknown).
tuning::Selector sharedMemorySelector(int ranks, HostLayout host, const Settings& settings);
/// `ranks` ranks joined by TCP, whose slowest NICs move `nicMbps` Mbit/s (0: unknown, or loopback). They may be on
/// several hosts: this host's CPUs say nothing of how many ranks share each, so no oversubscription is assumed.
tuning::Selector tcpSelector(int ranks, int nicMbps, const Settings& settings);
/// The allreduce of device buffers among `ranks` ranks for what the engine found, over the GPU links it found.
tuning::Selector deviceSelector(const device::DeviceFacts& facts, const device::GpuLinks& links, int ranks,
                                const Settings& settings);

}  // namespace braid::core
