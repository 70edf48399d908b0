// Factories beyond the public ones, for tests and tools that must set knobs per communicator rather than through
// the process environment (thread ranks of one test share one environment).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/engine.hpp"
#include "base/config.hpp"
#include "base/deadline.hpp"
#include "bootstrap/store.hpp"
#include "braid/braid.hpp"
#include "core/engine_stack.hpp"

namespace braid::core {

/// Communicator::create with explicit settings instead of the environment's.
std::unique_ptr<Communicator> createWithSettings(const UniqueId& id, int rank, int size, const Settings& settings,
                                                 std::shared_ptr<AbortHandle> abort = nullptr);

/// Joins `size` ranks that meet over `store` (whose keys are theirs alone), choosing shm or TCP as any creation
/// does; `keepAlive` is held as long as the new communicator (the parent's rendezvous server, for a split).
std::unique_ptr<Communicator> joinOverStore(std::shared_ptr<bootstrap::Store> store, std::shared_ptr<void> keepAlive,
                                            int rank, int size, const Settings& settings);

/// The host engine of `size` ranks that meet over `store` (whose keys are theirs alone), without a communicator
/// around it (the levels of the hierarchical allreduce): a TCP mesh among them, whose slowest NICs move `nicMbps`
/// (Placement::slowestNicMbps; 0: unknown, or one host), or, for ranks of one host, a shared-memory group laid out
/// as `host` says.
std::unique_ptr<Engine> joinTcpEngine(bootstrap::Store& store, int rank, int size, const Settings& settings,
                                      int nicMbps, Deadline deadline);
std::unique_ptr<Engine> joinShmEngine(bootstrap::Store& store, int rank, int size, const Settings& settings,
                                      HostLayout host, Deadline deadline);
/// Where several hosts share a machine: the GPU (device::gpuIdentity) current on this rank that another of the
/// `size` ranks meeting over `store` holds too, or empty.
std::string gpuSharedAcrossHosts(bootstrap::Store& store, int rank, int size, Deadline deadline);

class CommunicatorImpl;
/// Communicator::subgroup without its checks (`ranks` valid, distinct, this rank among them): the listed ranks of
/// `parent` join a communicator of their own over its store, with no collective of the parent's.
std::unique_ptr<Communicator> makeSubgroup(CommunicatorImpl& parent, const std::vector<int>& ranks);

}  // namespace braid::core
