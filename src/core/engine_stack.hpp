// The engines of one group of ranks: the host engine creation made (shared memory or the network), and the device
// engine over it, made at the group's first call on GPU memory. A communicator has one; the hierarchical allreduce
// has one for each of its levels.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/engine.hpp"
#include "base/config.hpp"
#include "core/memory_kind.hpp"
#include "topology/topology.hpp"
#include "transport/local_fabric.hpp"
#include "transport/local_group.hpp"

namespace braid::core {

/// The ranks of a host-engine group on this rank's host, the CPUs they may use together and the NUMA nodes they run
/// on (Placement::localSize, localCpus and localNumaNodes, the same on each of them), and the size of the /dev/shm
/// they share; zeros: every rank here, on the CPUs this process may use, NUMA nodes unknown, this host's /dev/shm.
struct HostLayout {
  int ranks = 0;
  int cpus = 0;
  int numaNodes = 0;
  std::uint64_t shmBytes = 0;
};

/// `host`'s ranks, cpus and shmBytes made whole: where the placement did not say, every rank runs here on this
/// process's CPUs, beside this host's /dev/shm (0 where its size cannot be read).
HostLayout orThisProcess(HostLayout host, int size);

/// More ranks on the host than the CPUs they may use (ranks on other hosts take none): waits then spin briefly.
bool outnumbersItsCpus(HostLayout host);

/// The output size from which the shared-memory engine streams its writes (BRAID_SHM_STREAM_BYTES, its `auto` read
/// from `machine`'s L2); SIZE_MAX for off. InvalidArgument names a malformed value.
std::size_t streamingFromBytes(const Settings& settings, const topology::Topology& machine);

/// The region each of a shared-memory group's `size` ranks exposes: its collective slots (BRAID_SHM_SLOT_BYTES, else
/// by the rank count and the threads of each rank: tuning::shmSlotBytes) and its send/recv rings. The same on every
/// rank of the group.
transport::FabricLayout localFabricLayout(int size, const Settings& settings, HostLayout host = {});

/// The threads each rank of a shared-memory group of `size` runs its large passes on (BRAID_SHM_THREADS): the count
/// given, or for auto (the default, also when set empty) `host`'s CPUs divided among its ranks, at most 8, and fewer
/// where the group's regions would take more than half of `host`'s /dev/shm (each group by itself: a program of
/// several groups has each take up to half). The same on every rank of the group (the layout is the group's).
/// InvalidArgument names a malformed value.
int sharedMemoryThreads(const Settings& settings, HostLayout host, int size);

/// Ranks of one host: a LocalEngine over `group` (regions of localFabricLayout), its algorithms chosen by the
/// selector for `host`.
std::unique_ptr<Engine> makeLocalEngine(int size, std::unique_ptr<transport::LocalGroup> group,
                                        const Settings& settings, HostLayout host);

class EngineStack {
 public:
  /// `sharedGpu`: the GPU this rank shares with ranks of other hosts on its machine (device_engine_factory.hpp).
  EngineStack(int rank, int size, std::unique_ptr<Engine> host, Settings settings);

  /// The GPU this rank shares with ranks of other hosts on its machine (device_engine_factory.hpp), learned by
  /// creation; before the first call on GPU memory.
  void attachSharedGpu(std::string gpu) { sharedGpu_ = std::move(gpu); }

  Engine& host() const { return *host_; }
  /// The shared-memory group of ranks that share a host; null over the network.
  transport::LocalGroup* localGroup() const;
  /// The engine for a call whose buffers took `route`: the host engine (after the call's stream, when it has one)
  /// or the device engine, made at the first call on GPU memory. For the thread running calls.
  Engine& forRoute(const Route& route, const OpEnv& env);
  /// The device engine, once a call on device buffers made it (else null): for the thread running calls, and from
  /// any thread for what EngineControl allows (abort, asyncError).
  Engine* device() const { return deviceView_.load(std::memory_order_acquire); }
  /// From any thread: both engines' abort.
  void abort();
  /// From any thread, once: this rank's communicator broke in call `seq` (EngineControl::tellPeersBroken).
  void tellPeersBroken(std::int64_t seq, ErrorCode code) { host_->tellPeersBroken(seq, code); }
  /// From any thread: the device engine's failure of work that ran after its call returned, if it was made.
  std::optional<Error> asyncError(const CallContext& ctx) const;

 private:
  const int rank_;
  const int size_;
  const Settings settings_;
  std::string sharedGpu_;
  std::unique_ptr<Engine> host_;
  std::unique_ptr<Engine> device_;  // declared after host_: it runs over it, and goes first
  std::atomic<Engine*> deviceView_{nullptr};
};

}  // namespace braid::core
