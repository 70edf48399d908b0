// The collectives of ranks that share a GPU, behind one interface: DeviceEngine picks an implementation when it
// connects (every rank the same one) and sends every call of those ranks to it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/op_env.hpp"
#include "braid/types.hpp"

namespace braid::device {

class CoLocatedCollectives {
 public:
  virtual ~CoLocatedCollectives() = default;

  /// What `BRAID_LOG=info` and explain call the path.
  virtual const char* name() const = 0;
  /// The allreduce algorithm's name after "cuda_ipc/" (Communicator's allreduceAlgorithm): "shared", "leader", ...
  virtual const char* algorithm() const = 0;
  /// Whether calls read the peers' buffers where they lie (instead of copies the peers published), and how many
  /// did so far.
  virtual bool inPlace() const { return false; }
  virtual std::uint64_t inPlaceCalls() const { return 0; }
  /// Whether a small call between processes goes faster staged through host memory than on this path (whose
  /// kernels then wait for the GPU to switch contexts).
  virtual bool smallCallsFasterStaged() const { return true; }
  /// Ends every wait on the GPU that this rank's queued calls hold (a peer was lost, the communicator aborted):
  /// their outputs are undefined. Any thread, never blocks. Paths whose host waits end by themselves need none.
  virtual void release() {}
  /// Whether release() ran.
  virtual bool released() const { return false; }

  virtual void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                         const OpEnv& env) = 0;
  virtual void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
                      const OpEnv& env) = 0;
  virtual void reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                             const OpEnv& env) = 0;
  virtual void broadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env) = 0;
  virtual void allgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) = 0;
  virtual void gather(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env) = 0;
  virtual void scatter(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env) = 0;
  virtual void alltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) = 0;
};

}  // namespace braid::device
