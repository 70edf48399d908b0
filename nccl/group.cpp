#include "group.hpp"

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

#include "comm.hpp"

namespace braid::nccl {

namespace {

struct GroupState {
  int depth = 0;
  std::vector<Deferred> calls;
  std::vector<ncclComm_t> creations;
};

thread_local GroupState group;

// Each communicator's point-to-point calls since its last collective, posted as one group (on the stream of the
// first of them).
struct P2pBatch {
  ncclComm_t comm;
  std::vector<P2pOp> ops;
  CUstream_st* stream;
};

void runHere(std::vector<Deferred>& calls) {
  std::vector<P2pBatch> batches;
  auto flush = [&](ncclComm_t comm) {
    for (auto it = batches.begin(); it != batches.end(); ++it) {
      if (it->comm != comm) continue;
      communicatorOf(comm).group(it->ops, {.stream = it->stream});
      batches.erase(it);
      return;
    }
  };
  for (Deferred& call : calls) {
    if (call.p2p) {
      auto it = std::find_if(batches.begin(), batches.end(), [&](const P2pBatch& b) { return b.comm == call.comm; });
      if (it == batches.end()) it = batches.insert(batches.end(), P2pBatch{call.comm, {}, call.stream});
      it->ops.push_back(*call.p2p);
      continue;
    }
    flush(call.comm);
    call.run(communicatorOf(call.comm));
  }
  while (!batches.empty()) flush(batches.front().comm);
}

void startEverywhere(std::vector<Deferred>& calls) {
  std::vector<Work> works;
  std::exception_ptr first;
  std::vector<P2pBatch> batches;
  auto flush = [&](ncclComm_t comm) {
    for (auto it = batches.begin(); it != batches.end(); ++it) {
      if (it->comm != comm) continue;
      works.push_back(communicatorOf(comm).groupAsync(std::move(it->ops), {.stream = it->stream}));
      batches.erase(it);
      return;
    }
  };
  try {
    for (Deferred& call : calls) {
      if (call.p2p) {
        auto it = std::find_if(batches.begin(), batches.end(), [&](const P2pBatch& b) { return b.comm == call.comm; });
        if (it == batches.end()) it = batches.insert(batches.end(), P2pBatch{call.comm, {}, call.stream});
        it->ops.push_back(*call.p2p);
        continue;
      }
      flush(call.comm);
      works.push_back(call.start(communicatorOf(call.comm)));
    }
    while (!batches.empty()) flush(batches.front().comm);
  } catch (...) {
    first = std::current_exception();
  }
  // Every started call ends before the group does, failed or not.
  for (const Work& work : works) {
    try {
      work.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace

bool grouping() { return group.depth > 0; }

void groupStart() { ++group.depth; }

void defer(Deferred call) { group.calls.push_back(std::move(call)); }

void deferCreation(ncclComm_t comm) { group.creations.push_back(comm); }

void groupEnd(bool simulate) {
  if (group.depth == 0) throw Error(ErrorCode::kInvalidArgument, "ncclGroupEnd without ncclGroupStart");
  if (--group.depth > 0) return;
  std::vector<Deferred> calls = std::move(group.calls);
  std::vector<ncclComm_t> creations = std::move(group.creations);
  group.calls.clear();
  group.creations.clear();
  std::exception_ptr first;
  for (ncclComm_t comm : creations) {
    try {
      (void)communicatorOf(comm);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  if (simulate || calls.empty()) return;
  bool one = true;
  for (const Deferred& call : calls) one = one && call.comm == calls.front().comm;
  if (one) {
    runHere(calls);
  } else {
    startEverywhere(calls);
  }
}

}  // namespace braid::nccl
