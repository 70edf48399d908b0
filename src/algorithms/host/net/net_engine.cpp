// NetEngine: construction, the choice of algorithm, the calls' dispatch, barrier and rejected calls.
#include "algorithms/host/net/net_engine.hpp"

#include "base/error.hpp"

namespace braid::host {

std::vector<tuning::AlgorithmDescriptor> netAllreduceAlgorithms() {
  using tuning::Algorithm, tuning::Collective, tuning::Link, tuning::Schedule;
  return {
      {.id = Algorithm::kTcpDirect,
       .name = "direct",
       .collective = Collective::kAllreduce,
       .link = Link::kTcp,
       .schedule = Schedule::kDirect,
       .how = "every rank sends its input to every peer and reduces all n in rank order: one message latency, n-1 "
              "messages"},
      // With 2 ranks doubling is direct's one exchange; with 3 its fold adds two message latencies (the model
      // prices that too); measured from 4 ranks on over loopback (docs/BENCHMARKS.md).
      {.id = Algorithm::kTcpDoubling,
       .name = "doubling",
       .collective = Collective::kAllreduce,
       .link = Link::kTcp,
       .schedule = Schedule::kDoubling,
       .minRanks = 4,
       .how = "recursive doubling: log2 n exchanges of the whole buffer, one peer at a time"},
      {.id = Algorithm::kTcpRing,
       .name = "ring",
       .collective = Collective::kAllreduce,
       .link = Link::kTcp,
       .schedule = Schedule::kRing,
       .minRanks = 2,
       .pipelined = true,
       .how = "reduce-scatter then allgather around a ring, segments pipelined: each rank sends 2(n-1)/n of the "
              "buffer (bandwidth-optimal)"},
  };
}

const tuning::AlgorithmDescriptor& netAlgorithm(tuning::Algorithm id) {
  static const std::vector<tuning::AlgorithmDescriptor> all = netAllreduceAlgorithms();
  for (const tuning::AlgorithmDescriptor& a : all) {
    if (a.id == id) return a;
  }
  fail(ErrorCode::kInvalidArgument, {}, "algorithm ", static_cast<int>(id), " is not one of the network engine's");
}

NetEngine::NetEngine(std::unique_ptr<transport::NetTransport> net, NetPolicy policy, long spinMicros, bool fingerprint)
    : net_(std::move(net)),
      policy_(std::move(policy)),
      spinMicros_(spinMicros),
      fingerprint_(fingerprint),
      p2p_(*net_, spinMicros) {}

void NetEngine::exchangeFingerprints(NetCall& call) {
  // A step no algorithm uses (they count up from 0 and from 2^31).
  constexpr std::uint32_t kFingerprintStep = 0xfffffff0u;
  for (int p = 0; p < size(); ++p) {
    if (p == rank()) continue;
    call.recv(p, kFingerprintStep, nullptr, 0);
    call.send(p, kFingerprintStep, nullptr, 0);
  }
  call.waitAll();
}

std::string NetEngine::allreduceAlgorithm(std::size_t bytes) const {
  return doubling(bytes)        ? "doubling"
         : direct(bytes)        ? "direct"
         : policy_.compressBf16 ? "ring (float32 sums: bf16 on the wire)"
                                : "ring";
}

std::string NetEngine::explainAllreduce(std::size_t bytes) const { return policy_.explain(bytes); }

void NetEngine::run(const CallArgs& c, const OpEnv& env) {
  switch (c.collective) {
    case Collective::kBarrier:
      return runBarrier(env);
    case Collective::kRejected:
      return runReject(env);
    case Collective::kAllreduce:
      return runAllreduce(c.send, c.recv, c.count, c.type, c.op, env);
    case Collective::kReduce:
      return runReduce(c.send, c.recv, c.count, c.type, c.op, c.root, env);
    case Collective::kReduceScatter:
      return runReduceScatter(c.send, c.recv, c.count, c.type, c.op, env);
    case Collective::kBroadcast:
      return runBroadcast(c.recv, c.count, c.type, c.root, env);
    case Collective::kAllgather:
      return runAllgather(c.send, c.recv, c.count, c.type, env);
    case Collective::kAllgatherv:
      return runAllgatherv(c.send, c.count, c.recv, c.recvCounts, c.recvDispls, c.type, env);
    case Collective::kGather:
      return runGather(c.send, c.recv, c.count, c.type, c.root, env);
    case Collective::kScatter:
      return runScatter(c.send, c.recv, c.count, c.type, c.root, env);
    case Collective::kAlltoall:
      return runAlltoall(c.send, c.recv, c.count, c.type, env);
    case Collective::kAlltoallv:
      return runAlltoallv(c.send, c.sendCounts, c.sendDispls, c.recv, c.recvCounts, c.recvDispls, c.type, env);
    case Collective::kPointToPoint:
      return p2p_.run(c.ops, env);
  }
  fail(ErrorCode::kInternal, env.context, "the network engine has no ", collectiveName(c.collective));
}

bool NetEngine::runStaged(const CallArgs& c, StagedBuffer& staged, const OpEnv& env) {
  switch (c.collective) {
    case Collective::kAllreduce:
      return stagedAllreduce(staged, c.count, c.type, c.op, env);
    case Collective::kAllgather:
      return stagedAllgather(staged, c.count, c.type, env);
    case Collective::kReduceScatter:
      return stagedReduceScatter(staged, c.count, c.type, c.op, env);
    default:
      return false;
  }
}

void NetEngine::runBarrier(const OpEnv& env) {
  runCall(describeCall(Collective::kBarrier, env.context.seq, DataType::kUint8, 0), env, [&](NetCall& call) {
    // Dissemination: in round k every rank signals rank + 2^k and waits for rank - 2^k; after ceil(log2 n)
    // rounds every rank has heard, through some chain, from every other.
    const int n = size();
    std::uint32_t round = 0;
    for (int distance = 1; distance < n; distance *= 2, ++round) {
      call.send((rank() + distance) % n, round, nullptr, 0);
      call.wait(call.recv((rank() - distance + n) % n, round, nullptr, 0));
    }
    call.waitAll();
  });
}

void NetEngine::runReject(const OpEnv& env) {
  const std::int64_t seq = env.context.seq;
  net_->notifyFailure(seq, ErrorCode::kMismatch,
                      strCat("peer ", rank(), " rejected its arguments for call #", seq, " (see that rank's error)"));
  net_->finishCall(seq);
}

void NetEngine::wakePointToPoint() { net_->wakeWaiter(); }

}  // namespace braid::host
