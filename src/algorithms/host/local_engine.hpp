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
  /// `explainReduce` says why. `options`: how the collectives write large outputs and on how many threads.
  /// Heartbeats: every `heartbeatInterval` s this rank's counter advances; a peer's that stands still for
  /// `heartbeatTimeout` s makes waits on it fail with PeerLost (0 turns either off).
  LocalEngine(std::unique_ptr<transport::LocalGroup> group, const transport::FabricLayout& layout,
              std::function<const tuning::AlgorithmDescriptor&(std::size_t)> chooseReduce,
              std::function<std::string(std::size_t)> explainReduce, const LocalCollectives::Options& options,
              double heartbeatInterval = 0, double heartbeatTimeout = 0);

  transport::LocalGroup& group() { return fabric_.group(); }

  const char* transportName() const override { return fabric_.group().kind(); }
  std::string allreduceAlgorithm(std::size_t bytes) const override { return choose_(bytes).name; }
  std::string explainAllreduce(std::size_t bytes) const override { return explain_(bytes); }

  void run(const CallArgs& call, const OpEnv& env) override;
  void wakePointToPoint() override { p2p_.wake(); }
  void abort() override { fabric_.markAborted(); }
  std::string peerFailure(int peer) override { return fabric_.peerFailure(peer); }
  void tellPeersBroken(std::int64_t seq, ErrorCode code) override { fabric_.markBroken(seq, code); }
  std::string peerBroke(int peer) override { return fabric_.peerBroke(peer); }
  bool peerLeft(int peer) override { return fabric_.peerLeft(peer); }
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
