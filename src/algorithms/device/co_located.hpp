// The collectives of ranks that share a GPU, behind one interface: DeviceEngine picks an implementation when it
// connects (every rank the same one) and sends every call of those ranks to it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/call_args.hpp"
#include "algorithms/op_env.hpp"
#include "base/error.hpp"
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

  /// Runs `call`: an allreduce, reduce, reduce_scatter, broadcast, allgather, gather, scatter or alltoall (the
  /// others are staged by DeviceEngine).
  virtual void run(const CallArgs& call, const OpEnv& env) = 0;

 protected:
  /// run() for a path that has a member function per collective, named as Collectives names them.
  template <typename Path>
  static void runByName(Path& path, const CallArgs& c, const OpEnv& env);
};

template <typename Path>
void CoLocatedCollectives::runByName(Path& path, const CallArgs& c, const OpEnv& env) {
  switch (c.collective) {
    case Collective::kAllreduce:
      return path.allreduce(c.send, c.recv, c.count, c.type, c.op, env);
    case Collective::kReduce:
      return path.reduce(c.send, c.recv, c.count, c.type, c.op, c.root, env);
    case Collective::kReduceScatter:
      return path.reduceScatter(c.send, c.recv, c.count, c.type, c.op, env);
    case Collective::kBroadcast:
      return path.broadcast(c.recv, c.count, c.type, c.root, env);
    case Collective::kAllgather:
      return path.allgather(c.send, c.recv, c.count, c.type, env);
    case Collective::kGather:
      return path.gather(c.send, c.recv, c.count, c.type, c.root, env);
    case Collective::kScatter:
      return path.scatter(c.send, c.recv, c.count, c.type, c.root, env);
    case Collective::kAlltoall:
      return path.alltoall(c.send, c.recv, c.count, c.type, env);
    default:
      fail(ErrorCode::kInternal, env.context, path.name(), " has no ", collectiveName(c.collective));
  }
}

}  // namespace braid::device
