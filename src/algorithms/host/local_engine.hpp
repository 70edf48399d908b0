// The Engine of ranks that share one host: collectives in lock-step rounds over a LocalFabric, point-to-point
// over its byte rings.
#pragma once

#include <functional>
#include <memory>

#include "algorithms/engine.hpp"
#include "algorithms/host/local_collectives.hpp"
#include "algorithms/host/p2p.hpp"
#include "transport/local_fabric.hpp"
#include "transport/ticker.hpp"

namespace braid::host {

class LocalEngine final : public Engine {
 public:
  /// `chooseReduce` picks direct or rsag for a reduction of that many bytes (the selector's choice);
  /// `explainReduce` says why.
  /// Heartbeats: every `heartbeatInterval` s this rank's counter advances; a peer's that stands still for
  /// `heartbeatTimeout` s makes waits on it fail with PeerLost (0 turns either off).
  LocalEngine(std::unique_ptr<transport::LocalGroup> group, const transport::FabricLayout& layout,
              std::function<const tuning::AlgorithmDescriptor&(std::size_t)> chooseReduce,
              std::function<std::string(std::size_t)> explainReduce, double heartbeatInterval = 0,
              double heartbeatTimeout = 0);

  transport::LocalGroup& group() { return fabric_.group(); }

  const char* transportName() const override { return fabric_.group().kind(); }
  std::string allreduceAlgorithm(std::size_t bytes) const override { return choose_(bytes).name; }
  std::string explainAllreduce(std::size_t bytes) const override { return explain_(bytes); }

  void barrier(const OpEnv& env) override { collectives_.barrier(env); }
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                 const OpEnv& env) override {
    collectives_.allreduce(send, recv, count, type, op, choose_(count * dataTypeSize(type)).id, env);
  }
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
              const OpEnv& env) override {
    collectives_.reduce(send, recv, count, type, op, root, choose_(count * dataTypeSize(type)).id, env);
  }
  void reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                     const OpEnv& env) override {
    collectives_.reduceScatter(send, recv, recvCount, type, op, env);
  }
  void broadcast(void* buf, std::size_t count, DataType type, int root, const OpEnv& env) override {
    collectives_.broadcast(buf, count, type, root, env);
  }
  void allgather(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) override {
    collectives_.allgather(send, recv, count, type, env);
  }
  void allgatherv(const void* send, std::size_t sendCount, void* recv, const std::vector<std::size_t>& recvCounts,
                  const std::vector<std::size_t>& displs, DataType type, const OpEnv& env) override {
    collectives_.allgatherv(send, sendCount, recv, recvCounts, displs, type, env);
  }
  void gather(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env) override {
    collectives_.gather(send, recv, count, type, root, env);
  }
  void scatter(const void* send, void* recv, std::size_t count, DataType type, int root, const OpEnv& env) override {
    collectives_.scatter(send, recv, count, type, root, env);
  }
  void alltoall(const void* send, void* recv, std::size_t count, DataType type, const OpEnv& env) override {
    collectives_.alltoall(send, recv, count, type, env);
  }
  void alltoallv(const void* send, const std::vector<std::size_t>& sendCounts,
                 const std::vector<std::size_t>& sendDispls, void* recv, const std::vector<std::size_t>& recvCounts,
                 const std::vector<std::size_t>& recvDispls, DataType type, const OpEnv& env) override {
    collectives_.alltoallv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, env);
  }
  void pointToPoint(std::span<const P2pOp> ops, const OpEnv& env) override { p2p_.run(ops, env); }
  void wakePointToPoint() override { p2p_.wake(); }
  void reject(const OpEnv& env) override { collectives_.reject(env); }
  void abort() override { fabric_.markAborted(); }
  std::string peerFailure(int peer) override { return fabric_.peerFailure(peer); }
  void publishProgress(const transport::Progress& mine) override { fabric_.publishProgress(mine); }
  std::vector<transport::PeerProgress> peerProgress() override { return fabric_.peerProgress(); }

 private:
  transport::LocalFabric fabric_;
  LocalCollectives collectives_;
  P2pEngine p2p_;
  std::function<const tuning::AlgorithmDescriptor&(std::size_t)> choose_;
  std::function<std::string(std::size_t)> explain_;
  transport::Ticker heartbeat_;  // last: it stops before the fabric it beats on goes
};

}  // namespace braid::host
